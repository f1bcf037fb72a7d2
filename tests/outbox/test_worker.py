"""The worker and the outbox batch protocol, against a real HTTP server that records what it
receives: rows that name a batch url (X-Outbox-Batch) travel together, others alone, and each
row gets the outcome the batch answer gives it. The worker knows no path of the API."""
from __future__ import annotations

import asyncio
import dataclasses
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import orjson

from app.outbox.build import build_worker
from tests.conftest import ROOT


class Recorder(BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, Any, dict]]] = []

    def do_POST(self) -> None:
        body = orjson.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.received.append((self.path, self.headers, body))  # names case-insensitive, as HTTP's
        if self.path.endswith("/batch-here"):
            results = [{"id": r["id"], "status": 200 if i == 0 else 409,
                        **({"error": {"code": "EMISSION_IN_PROGRESS"}} if i else {})}
                       for i, r in enumerate(body["requests"])]
            answer = orjson.dumps({"success": True, "data": {"results": results}})
        else:
            answer = orjson.dumps({"success": True, "data": {}})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args) -> None:
        pass


def test_rows_travel_together_as_they_say(admin, config):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    admin.execute("UPDATE outbox.http_requests SET delivered_at = now(), lease_until = NULL WHERE delivered_at IS NULL")
    admin.execute("INSERT INTO outbox.batch_routes VALUES ('/test/one', '/test/batch-here') ON CONFLICT DO NOTHING")
    ids = [admin.execute("SELECT outbox.http_post(%s, %s::jsonb) AS id", (url, orjson.dumps(body).decode())
                         ).fetchone()["id"]
           for url, body in (("/test/one", {"n": 1}), ("/test/one", {"n": 2}), ("/test/alone", {"n": 3}))]
    try:
        async def run() -> None:
            async with build_worker(dataclasses.replace(config, public_base_url=base,
                                                        worker_poll_interval=0.1)) as worker:
                task = asyncio.create_task(worker.run())
                for _ in range(100):
                    await asyncio.sleep(0.05)
                    if worker.delivered >= 3:
                        break
                worker.stop()
                await task

        asyncio.run(run())
    finally:
        server.shutdown()
        admin.execute("DELETE FROM outbox.batch_routes WHERE url = '/test/one'")
    paths = sorted(path for path, _, _ in Recorder.received)
    assert paths == ["/test/alone", "/test/batch-here"], "two rows in one batch request, one alone"
    [(_, headers, batch)] = [r for r in Recorder.received if r[0] == "/test/batch-here"]
    assert [(r["id"], r["path"], r["body"]) for r in batch["requests"]] == [
        (ids[0], "/test/one", {"n": 1}), (ids[1], "/test/one", {"n": 2})]
    assert "X-Outbox-Batch" not in headers and headers["Authorization"].startswith("Bearer ")
    [(_, alone_headers, _)] = [r for r in Recorder.received if r[0] == "/test/alone"]
    assert "X-Outbox-Batch" not in alone_headers
    rows = {r["id"]: r for r in admin.execute("SELECT id, delivered_at, last_status FROM outbox.http_requests "
                                              "WHERE id = ANY(%s)", (ids,))}
    assert rows[ids[0]]["delivered_at"] is not None and rows[ids[0]]["last_status"] == 200
    assert rows[ids[1]]["delivered_at"] is None and rows[ids[1]]["last_status"] == 409, \
        "each row takes the outcome the batch answer gives it"
    admin.execute("UPDATE outbox.http_requests SET delivered_at = now() WHERE id = ANY(%s)", (ids,))


def test_the_worker_knows_no_path_of_the_api():
    source = "".join(p.read_text() for p in [*Path(ROOT, "app", "outbox").glob("*.py")])
    assert "/api/integrations" not in source, "rows say where they go and how they may be batched"


class _Trickle:
    """An HTTP peer that answers one byte every half second (each read is quick, the whole
    answer takes 20 s): how long each delivery stays connected, and how many overlap."""

    def __init__(self) -> None:
        import socket
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.spans: list[list[float]] = []
        self.stopping = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn) -> None:
        import time
        span = [time.monotonic(), None]
        self.spans.append(span)
        with conn:
            conn.recv(65536)
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 40\r\n\r\n")
                for _ in range(40):
                    if self.stopping:
                        break
                    time.sleep(0.5)
                    conn.sendall(b"x")
            except OSError:
                pass  # the worker hung up
            span[1] = time.monotonic()

    def close(self) -> None:
        self.stopping = True
        self.sock.close()


def test_a_slow_peer_is_cut_off_before_the_lease_ends_and_never_delivered_twice(admin, config):
    """Issue 19: a chat webhook that answers slowly, each read within HTTP_READ_TIMEOUT, outlived
    its lease and was delivered again while the first delivery still ran."""
    import time
    peer = _Trickle()
    admin.execute("UPDATE outbox.http_requests SET delivered_at = now(), lease_until = NULL WHERE delivered_at IS NULL")
    row = admin.execute("SELECT outbox.http_post(%s, '{\"text\": \"hello\"}'::jsonb) AS id",
                        (f"http://127.0.0.1:{peer.port}/chat/webhook",)).fetchone()["id"]
    lease = 4
    slow = dataclasses.replace(config, http_read_timeout=1.0, http_connect_timeout=1.0, http_total_timeout=2.0,
                               worker_poll_interval=0.1, worker_lease_seconds=lease)
    try:
        async def run() -> None:
            async with build_worker(slow) as worker:
                task = asyncio.create_task(worker.run())
                await asyncio.sleep(lease * 2)
                worker.stop()
                await task

        asyncio.run(run())
    finally:
        peer.close()
        admin.execute("UPDATE outbox.http_requests SET delivered_at = now() WHERE id = %s", (row,))
    now = time.monotonic()
    spans = [(start, end or now) for start, end in peer.spans]
    assert spans, "the peer was called"
    first_start, first_end = spans[0]
    assert first_end - first_start < lease - 0.5, f"the first delivery ran {first_end - first_start:.1f} s"
    overlapping = [s for s in spans[1:] if s[0] < first_end]
    assert not overlapping, "a second delivery began while the first was still running"
    recorded = admin.execute("SELECT attempts, last_error FROM outbox.http_requests WHERE id = %s",
                             (row,)).fetchone()
    assert recorded["attempts"] >= 1 and "total deadline" in (recorded["last_error"] or ""), recorded


class _Unhurried(BaseHTTPRequestHandler):
    """Answers each POST after a short pause, so that deliveries end one by one."""

    def do_POST(self) -> None:
        import time
        self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(0.02)
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_a_finished_delivery_does_not_send_the_worker_back_to_an_empty_queue(admin, config):
    """Issue 32: every delivery that ended woke the claims, and each found the queue empty: one
    claim_batch per webhook, most of the +700 µs of PostgreSQL CPU a webhook cost. The worker
    claims again when a notification, a delayed row or the poll says rows may be due, or when
    slots free up after a claim that filled them."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Unhurried)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    admin.execute("UPDATE outbox.http_requests SET delivered_at = now(), lease_until = NULL WHERE delivered_at IS NULL")
    ids = [admin.execute("SELECT outbox.http_post(%s, '{}'::jsonb) AS id",
                         (f"http://127.0.0.1:{server.server_port}/hook/{n}",)).fetchone()["id"] for n in range(40)]
    claims, delivered = [], []
    try:
        async def run() -> None:
            async with build_worker(dataclasses.replace(config, worker_poll_interval=5.0)) as worker:
                claim = worker.queue.claim

                async def counted(size: int):
                    got = await claim(size)
                    claims.append(len(got.rows))
                    return got
                worker.queue.claim = counted
                task = asyncio.create_task(worker.run())
                for _ in range(200):
                    await asyncio.sleep(0.05)
                    if worker.delivered >= len(ids):
                        break
                worker.stop()
                await task
                delivered.append(worker.delivered)

        asyncio.run(run())
    finally:
        server.shutdown()
        admin.execute("UPDATE outbox.http_requests SET delivered_at = now() WHERE id = ANY(%s)", (ids,))
    assert delivered == [len(ids)] and sum(claims) == len(ids)
    assert len(claims) <= 3, f"{len(claims)} claims for {len(ids)} rows delivered at once: {claims}"


def test_the_worker_process_never_loads_httpx(admin, tmp_path):
    """The worker sends with aiohttp alone (app/outbox/http.py): httpx and httpcore are 9 MB of
    a process whose goal is 48 MB, and cost a webhook about 450 µs of CPU more than aiohttp's
    POST. A real `python -m app worker` delivers an API batch, a plain call and a webhook row,
    stops on SIGTERM and says every module it loaded."""
    import json
    import signal
    import subprocess
    import sys

    from tests.conftest import child_environ
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    admin.execute("UPDATE outbox.http_requests SET delivered_at = now(), lease_until = NULL WHERE delivered_at IS NULL")
    admin.execute("INSERT INTO outbox.batch_routes VALUES ('/test/one', '/test/batch-here') ON CONFLICT DO NOTHING")
    ids = [admin.execute("SELECT outbox.http_post(%s, '{}'::jsonb) AS id", (url,)).fetchone()["id"]
           for url in ("/test/one", "/test/one", f"{base}/chat")]
    ids.append(admin.execute(
        "INSERT INTO outbox.http_requests (url, method, body, headers) VALUES (%s, 'POST', '{}', %s::jsonb) "
        "RETURNING id", (f"{base}/hook", json.dumps({"X-Outbox-Webhook": "00000000-0000-0000-0000-000000000000"}))
    ).fetchone()["id"])
    report = ("import atexit, json, sys, runpy\n"
              "atexit.register(lambda: print('MODULES', json.dumps(sorted({m.split('.')[0] for m, v in "
              "sys.modules.items() if v is not None})), file=sys.stderr, flush=True))\n"
              "runpy.run_module('app', run_name='__main__')\n")
    proc = subprocess.Popen([sys.executable, "-c", report, "worker", "--poll-interval", "0.2"], cwd=ROOT,
                            env=child_environ(PUBLIC_BASE_URL=base, LOG_LEVEL="warning"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        from tests.conftest import wait_for
        wait_for(lambda: admin.execute("SELECT count(*) AS n FROM outbox.http_requests WHERE id = ANY(%s) "
                                       "AND attempts > 0", (ids,)).fetchone()["n"] == len(ids),
                 what="every row tried")
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        server.shutdown()
        admin.execute("DELETE FROM outbox.batch_routes WHERE url = '/test/one'")
        admin.execute("UPDATE outbox.http_requests SET delivered_at = now() WHERE id = ANY(%s)", (ids,))
    assert proc.returncode == 0, stderr
    [line] = [line for line in stderr.splitlines() if line.startswith("MODULES ")]
    loaded = set(json.loads(line.split(" ", 1)[1]))
    assert not loaded & {"httpx", "httpcore", "anyio", "rich"}, sorted(loaded & {"httpx", "httpcore", "anyio", "rich"})
    assert "aiohttp" in loaded, "the worker sent its rows"
