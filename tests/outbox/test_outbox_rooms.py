"""The worker's rooms one at a time (app/outbox/): each deliverer alone against a real HTTP
server that records what it receives, and the queue against PostgreSQL. tests/outbox/test_worker.py
and tests/integrations/ run them together as the worker does."""
from __future__ import annotations

import asyncio
import contextlib
import threading
import types
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
import pytest
from standardwebhooks.webhooks import Webhook

from app.db import Database
from app.outbox.deliverers import ApiBatch, Deliverers, Http, PlainCall, Webhooks, api_client, webhook_client
from app.outbox.queue import OutboxQueue
from app.outbox.webhooks import EndpointClients, WebhookSender
from app.tokens import service_tokens
from app.webhooks import derive_secret
from tests.conftest import free_port


class Peer:
    """A real HTTP server: records (path, headers, body, client port) and answers by path;
    `answers` maps a path to (status, JSON body), 200 {} otherwise; https with `tls`."""

    def __init__(self, answers: dict[str, tuple[int, Any]] | None = None, tls: Any = None) -> None:
        self.received: list[tuple[str, Any, Any, int]] = []
        self.answers = answers or {}
        peer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keeps connections alive, as a partner's server does

            def do_POST(self) -> None:
                body = orjson.loads(self.rfile.read(int(self.headers["Content-Length"])))
                peer.received.append((self.path, self.headers, body, self.client_address[1]))  # names case-insensitive
                status, answer = peer.answers.get(self.path, (200, {}))
                if callable(answer):
                    answer = answer(body)
                raw = orjson.dumps(answer)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args) -> None:
                pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # connections opened at once wait to be accepted, never refused

        self.server = Server(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextlib.contextmanager
def peer(tls: Any = None, **answers: tuple[int, Any]) -> Iterator[Peer]:
    p = Peer({k.replace("__", "/").replace("_", "-"): v for k, v in answers.items()}, tls)
    try:
        yield p
    finally:
        p.close()


def run(coro):
    return asyncio.run(coro)


CONFIG = types.SimpleNamespace(http_read_timeout=2.0, http_total_timeout=2.0, http_connect_timeout=1.0)


async def _with_http(base: str, fn, counted: list[str] | None = None):
    async with api_client(8, CONFIG) as client:
        http = Http(client, base, service_tokens("s" * 40), lease_seconds=8, total_timeout=2.0,
                    count=(counted.append if counted is not None else lambda r: None))
        return await fn(http)


def row(row_id: int, url: str, body: Any = None, **headers: str) -> dict[str, Any]:
    return {"id": row_id, "url": url, "method": "POST", "body": body or {"n": row_id}, "headers": headers,
            "attempts": 1}


# ---------------------------------------------------------------- PlainCall

def test_a_plain_call_sends_a_path_to_the_api_with_the_bearer_and_a_url_as_it_is():
    counted: list[str] = []
    with peer(__api__gone=(503, {"down": True})) as api, peer() as partner:
        rows = [row(1, "/api/one", **{"X-Outbox-Batch": "/api/many", "X-Custom": "yes"}),
                row(2, partner.url + "/chat"), row(3, "/api/gone")]
        outcomes = run(_with_http(api.url, lambda http: PlainCall(http).deliver(rows), counted))
    assert sorted((o["id"], o["status"]) for o in outcomes) == [(1, 200), (2, 200), (3, 503)]
    assert next(o for o in outcomes if o["id"] == 3)["error"] == '{"down":true}'
    [(_, headers, body, _)] = [r for r in api.received if r[0] == "/api/one"]
    assert headers["Authorization"].startswith("Bearer ") and headers["X-Custom"] == "yes"
    assert "X-Outbox-Batch" not in headers and headers["X-Request-Id"] == "outbox-1-1" and body == {"n": 1}
    [(_, partner_headers, _, _)] = partner.received
    assert "Authorization" not in partner_headers, "the service bearer never leaves for another host"
    assert sorted(counted) == ["ok", "ok", "retry"]


def test_a_plain_call_to_nobody_is_retried_and_our_apis_401_is_a_configuration_error():
    down = f"http://127.0.0.1:{free_port()}/hook"
    with peer(__api__x=(401, {}), __elsewhere=(401, {})) as api:
        rows = [row(1, down), row(2, "/api/x"), row(3, api.url + "/elsewhere")]
        outcomes = {o["id"]: o for o in run(_with_http(api.url, lambda http: PlainCall(http).deliver(rows)))}
    assert outcomes[1]["status"] is None and outcomes[1]["error"].startswith("ConnectError")
    assert outcomes[2]["status"] == 401 and outcomes[2]["retry"] is True, "kept for a worker with the right secret"
    assert outcomes[3]["status"] == 401 and "retry" not in outcomes[3], "a partner's 401 is its answer"


# ---------------------------------------------------------------- ApiBatch

def test_an_api_batch_is_one_request_and_each_row_takes_its_own_outcome():
    def answer(body):
        first, second, _missing = body["requests"]
        return {"success": True, "data": {"results": [
            {"id": first["id"], "status": 200},
            {"id": second["id"], "status": 409, "error": {"code": "EMISSION_IN_PROGRESS"}}]}}

    with peer(__api__many=(200, answer)) as api:
        rows = [row(i, "/api/one", **{"X-Outbox-Batch": "/api/many"}) for i in (11, 12, 13)]
        outcomes = {o["id"]: o for o in run(_with_http(api.url, lambda http: ApiBatch(http).deliver(rows)))}
    [(path, headers, body, _)] = api.received
    assert path == "/api/many" and headers["Authorization"].startswith("Bearer ")
    assert body == {"requests": [{"id": i, "path": "/api/one", "body": {"n": i}} for i in (11, 12, 13)]}
    assert outcomes[11] == {"id": 11, "status": 200, "error": None}
    assert outcomes[12]["status"] == 409 and "EMISSION_IN_PROGRESS" in outcomes[12]["error"]
    assert outcomes[13] == {"id": 13, "status": None, "error": "missing from the batch answer"}


def test_an_api_batch_refused_whole_gives_every_row_the_answer():
    with peer(__api__many=(500, {"oops": 1})) as api:
        rows = [row(i, "/api/one", **{"X-Outbox-Batch": "/api/many"}) for i in (1, 2)]
        outcomes = run(_with_http(api.url, lambda http: ApiBatch(http).deliver(rows)))
    assert [(o["id"], o["status"]) for o in outcomes] == [(1, 500), (2, 500)]


def test_rows_are_routed_to_their_deliverer_in_chunks():
    api_batch, plain, webhooks = object(), object(), object()
    router = Deliverers(api_batch, plain, webhooks, batch_size=2)
    rows = [row(1, "/a", **{"X-Outbox-Batch": "/many"}), row(2, "/a", **{"X-Outbox-Batch": "/many"}),
            row(3, "/a", **{"X-Outbox-Batch": "/many"}), row(4, "https://x.example/hook", **{"X-Outbox-Webhook": "c"}),
            row(5, "https://chat.example/"), row(6, "https://x.example/", **{"X-Outbox-Batch": "/many"})]
    routes = [(d, [r["id"] for r in rows]) for d, rows in router.route(rows)]
    assert sorted(routes, key=lambda r: r[1]) == [(api_batch, [1, 2]), (plain, [3]), (webhooks, [4]), (plain, [5]),
                                                  (plain, [6])]


# ---------------------------------------------------------------- Webhooks

async def _secret(secret: str):
    return [secret]


def test_a_webhook_is_signed_with_the_channels_secret_and_its_connection_is_kept():
    secret = derive_secret("k" * 40, b"salt")
    channel = str(uuid.uuid4())
    results: list[str] = []

    async def deliver(url: str):
        async with webhook_client(8, 5.0) as client:
            webhooks = Webhooks(WebhookSender(client, lambda c: _secret(secret), public_only=False,
                                                 on_result=results.append))
            first = await webhooks.deliver([row(1, url, {"type": "emission.succeeded"},
                                                **{"X-Outbox-Webhook": channel, "webhook-id": "msg_1"})])
            second = await webhooks.deliver([row(2, url, {"type": "emission.failed"},
                                                 **{"X-Outbox-Webhook": channel, "webhook-id": "msg_2"})])
            return first + second

    with peer() as partner:
        outcomes = run(deliver(partner.url + "/hook"))
    assert [(o["id"], o["status"], o["error"]) for o in outcomes] == [(1, 200, None), (2, 200, None)]
    assert results == ["delivered", "delivered"]
    for (_, headers, body, _), msg_id in zip(partner.received, ("msg_1", "msg_2")):
        assert "X-Outbox-Webhook" not in headers
        verified = Webhook(secret).verify(orjson.dumps(body), {k.lower(): v for k, v in headers.items()})
        assert headers["Content-Type"] == "application/json"
        assert verified == body and headers["webhook-id"] == msg_id
    ports = {client_port for *_, client_port in partner.received}
    assert len(ports) == 1, "the second delivery to an endpoint reuses the first one's connection"


def test_many_partners_each_keep_their_connections():
    """The partner mix: 8 endpoints, 4 deliveries in flight at each (WEBHOOK_ENDPOINT_CONCURRENCY),
    twice. The second wave goes over the first wave's connections: with one pool for every
    partner, httpcore closed an idle connection whenever the pool held more than it kept alive,
    so each wave opened new ones (a TCP connect per webhook)."""
    import time
    secret = derive_secret("k" * 40, b"salt")
    channel = str(uuid.uuid4())

    def slow(body):
        time.sleep(0.2)  # the four deliveries of an endpoint are in flight together
        return {}

    async def waves(url: str) -> list[list[dict]]:
        async with webhook_client(4, 5.0) as client:
            webhooks = Webhooks(WebhookSender(client, lambda c: _secret(secret), public_only=False, per_endpoint=4))
            done = []
            for wave in range(2):
                rows = [row(100 * wave + 10 * e + i, f"{url}/hook-{e}", {"type": "emission.succeeded"},
                            **{"X-Outbox-Webhook": channel, "webhook-id": f"msg_{wave}_{e}_{i}"})
                        for e in range(8) for i in range(4)]
                done.append(await webhooks.deliver(rows))
            return done

    with peer(**{f"__hook_{e}": (200, slow) for e in range(8)}) as partner:
        first, second = run(waves(partner.url))
    assert [o["status"] for o in first + second] == [200] * 64, first + second
    ports = [client_port for *_, client_port in partner.received]
    assert len(set(ports[:32])) > 8, "the first wave ran several deliveries at each endpoint at once"
    assert set(ports[32:]) <= set(ports[:32]), "the second wave reuses the first wave's connections"


@pytest.fixture
def partner_tls(tmp_path) -> Iterator[tuple[Peer, list[str], Any]]:
    """A partner on loopback behind TLS: a certificate of its own for partner.test; yields the
    peer, the server names its clients asked for (SNI), and a client context that trusts it."""
    import ssl
    import subprocess
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=partner.test", "-addext", "subjectAltName=DNS:partner.test"],
                   check=True, capture_output=True)
    names: list[str] = []
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    tls.sni_callback = lambda sock, name, ctx: names.append(name)
    with peer(tls) as p:
        yield p, names, ssl.create_default_context(cafile=cert)


def test_a_public_webhook_goes_to_the_address_checked_with_the_hosts_name_and_certificate(partner_tls, monkeypatch):
    """Outside development the connection goes to the address check_address judged (a second
    lookup cannot point elsewhere), while TLS asks for the URL's host (SNI), checks the
    certificate against that name, and the Host header is the URL's."""
    import app.webhooks
    partner, names, trust = partner_tls
    port = partner.server.server_port
    checked: list[str] = []

    async def check_address(host: str, resolver=None) -> list[str]:
        checked.append(host)
        return ["127.0.0.1"]  # what the partner's name resolves to, for this test
    monkeypatch.setattr(app.webhooks, "check_address", check_address)
    secret = derive_secret("k" * 40, b"salt")

    async def deliver():
        async with EndpointClients(4, 5.0, tls=trust) as client:
            webhooks = Webhooks(WebhookSender(client, lambda c: _secret(secret), public_only=True))
            return await webhooks.deliver([
                row(1, f"https://partner.test:{port}/hook", {"type": "emission.succeeded"},
                    **{"X-Outbox-Webhook": "c", "webhook-id": "msg_1"}),
                row(2, f"https://other.test:{port}/hook", {"type": "emission.succeeded"},
                    **{"X-Outbox-Webhook": "c", "webhook-id": "msg_2"})])

    outcomes = {o["id"]: o for o in run(deliver())}
    assert isinstance(outcomes[1].pop("ms"), int), "the answer time, for the health chart"
    assert outcomes[1] == {"id": 1, "status": 200, "error": None}
    [(path, headers, body, _)] = partner.received
    assert path == "/hook" and headers["Host"] == f"partner.test:{port}"
    assert Webhook(secret).verify(orjson.dumps(body), {k.lower(): v for k, v in headers.items()}) == body
    assert sorted(checked) == ["other.test", "partner.test"] and sorted(set(names)) == ["other.test", "partner.test"]
    assert outcomes[2]["status"] is None and outcomes[2]["error"] == "WEBHOOK_UNREACHABLE: ConnectError", \
        "a certificate that does not name the URL's host is refused"


def test_at_most_64_kib_of_a_webhook_answer_is_read_and_the_error_keeps_an_excerpt():
    secret = derive_secret("k" * 40, b"salt")
    big = "é" + "x" * (1024 * 1024)

    async def deliver(url: str):
        async with webhook_client(4, 5.0) as client:
            webhooks = Webhooks(WebhookSender(client, lambda c: _secret(secret), public_only=False))
            return await webhooks.deliver([row(1, url, **{"X-Outbox-Webhook": "c"})])

    with peer(__hook=(500, {"message": big})) as partner:
        [outcome] = run(deliver(partner.url + "/hook"))
    assert outcome["status"] == 500 and outcome["retry"] is True
    assert outcome["error"] == "WEBHOOK_HTTP_500: " + ('{"message":"' + big)[:200]


def test_a_webhook_whose_secrets_cannot_be_read_is_deferred_without_an_attempt():
    import asyncpg

    async def no_database(channel: str):
        raise asyncpg.CannotConnectNowError("starting up")

    async def deliver():
        async with webhook_client(8, 5.0) as client:
            webhooks = Webhooks(WebhookSender(client, no_database, public_only=False))
            return await webhooks.deliver([row(7, "http://127.0.0.1:9/hook", **{"X-Outbox-Webhook": "c"})])

    assert run(deliver()) == [{"id": 7, "status": None, "error": None, "defer": 2}]


# ---------------------------------------------------------------- OutboxQueue

@pytest.fixture
def quiet_outbox(admin):
    """No row of another test is due: each test claims only its own."""
    admin.execute("UPDATE outbox.http_requests SET delivered_at = now(), lease_until = NULL WHERE delivered_at IS NULL")
    yield
    admin.execute("UPDATE outbox.http_requests SET delivered_at = now(), lease_until = NULL WHERE delivered_at IS NULL")


def _queue(config, name: str) -> OutboxQueue:
    return OutboxQueue(Database(config.database_url, 1, 1, config.db_statement_cache_size), name,
                       lease_seconds=30, max_attempts=3)


def _post(admin, n: int) -> list[int]:
    return [admin.execute("SELECT outbox.http_post('https://chat.example/hook', %s::jsonb) AS id",
                          (orjson.dumps({"n": i}).decode(),)).fetchone()["id"] for i in range(n)]


def test_the_queue_claims_each_row_once_records_outcomes_in_one_call_and_releases(admin, config, quiet_outbox):
    ids = _post(admin, 4)

    async def scenario():
        one, two = _queue(config, "queue-test-1"), _queue(config, "queue-test-2")
        await one.open()
        await two.open()
        try:
            first = await one.claim(3)
            second = await two.claim(10)
            claimed = [r["id"] for r in first.rows], [r["id"] for r in second.rows]
            done, held = first.rows[:2], first.rows[2:]
            one.add([{"id": done[0]["id"], "status": 200, "error": None}])
            one.add([{"id": done[1]["id"], "status": 503, "error": "down"}])
            assert one.unrecorded == 2
            assert await one.record() is True and one.unrecorded == 0 and one.recorded == 2
            await one.release([r["id"] for r in held])
            again = await two.claim(10)
            return claimed, done, held, [r["id"] for r in again.rows]
        finally:
            await one.close()
            await two.close()

    (first, second), done, held, again = run(scenario())
    assert sorted(first + second) == ids and not set(first) & set(second), "a claimed row is nobody else's"
    rows = {r["id"]: r for r in admin.execute(
        "SELECT id, delivered_at, last_status, last_error, attempts, lease_until, leased_by FROM outbox.http_requests "
        "WHERE id = ANY(%s)", (ids,))}
    assert rows[done[0]["id"]]["delivered_at"] is not None and rows[done[0]["id"]]["last_status"] == 200
    assert rows[done[1]["id"]]["delivered_at"] is None and rows[done[1]["id"]]["last_error"] == "down"
    assert again == [held[0]["id"]], "a released row is due again at once"


def test_outcomes_the_database_could_not_take_are_kept_for_the_next_record(admin, config, quiet_outbox):
    [row_id] = _post(admin, 1)

    async def scenario():
        queue = _queue(config, "queue-test-3")
        away = Database(f"postgresql://insurance_app@127.0.0.1:{free_port()}/away", 1, 1)
        await queue.open()
        await away.open()  # starts anyway; each call is refused
        try:
            [claimed] = (await queue.claim(1)).rows
            reachable, queue.db = queue.db, away
            queue.add([{"id": claimed["id"], "status": 200, "error": None}])
            while_away = await queue.record(), queue.unrecorded
            queue.db = reachable
            return claimed["id"], while_away, await queue.record(), queue.unrecorded
        finally:
            await queue.close()
            await away.close()

    claimed, while_away, back, left = run(scenario())
    assert claimed == row_id and while_away == (False, 1), "kept while the database is away"
    assert (back, left) == (True, 0)
    assert admin.execute("SELECT last_status FROM outbox.http_requests WHERE id = %s",
                         (row_id,)).fetchone()["last_status"] == 200
