"""`python -m app worker`: delivers the outbox (outbox.http_requests) that the database fills.

    LISTEN outbox ──► claim a batch (outbox.claim_batch: FOR UPDATE SKIP LOCKED + lease)
                 ──► deliver concurrently (one pooled httpx.AsyncClient)
                 ──► record the answers in batches (outbox.record_deliveries)

A row's url may be a path of the API: it goes to the API (PUBLIC_BASE_URL)
with the service-role bearer, which only this process holds. Delayed rows (deliver_after)
wake the worker at their time (the claim answers when the next one is due), and a poll
interval covers a lost notification, so a retry is never late by more than the poll interval.
A row says itself whether it may travel with others: its header X-Outbox-Batch names the url
that takes many at once (outbox.batch_routes; the API's emission routes, whose batch url
claims, emits and records them together). Rows of one batch url go in one request of the
outbox batch protocol, and each row still gets its own outcome:

    POST <batch url>  {"requests": [{"id": outbox id, "path": row url, "body": row body}, ...]}
    200 {"data": {"results": [{"id", "status": what the row's own url would answer, "error"?}]}} Several workers may run at once. SIGTERM or SIGINT: stop claiming, finish what is in flight
(up to a grace period), record it, and give back what could not finish. A worker killed
outright loses nothing: its leases expire and another worker delivers the rows again (the
endpoints are idempotent on the emission key).

A 401 or 403 from the service's own API means this worker holds the wrong SERVICE_ROLE_SECRET:
a configuration error, never a delivery. The row stays in the queue (with its backoff) for a
worker that holds the right one, and dies after OUTBOX_MAX_ATTEMPTS like any failing row.
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import signal
import time
from typing import Any

import asyncpg
import httpx
import orjson
import structlog

from app.config import Config
from app.db import PROCESS_NAME, SERVICE, Database
from app.tokens import service_tokens
from app.webhooks import Deliverer, SecretCache

# What a database outage or restart raises: a refused connection (OSError), a server error
# (e.g. 57P01 admin_shutdown), or a connection that closed mid-statement (InterfaceError).
DATABASE_ERRORS = (OSError, asyncpg.PostgresError, asyncpg.InterfaceError)

log = structlog.get_logger("app.worker")


async def wait_event(event: asyncio.Event, seconds: float) -> None:
    """Until `event` is set or `seconds` pass. Not asyncio.wait_for: on Python 3.11 a cancel
    that meets its timeout can be lost, and the flusher then never stopped at shutdown
    (a worker hung after SIGTERM about one run in two)."""
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        pass

# The header by which a row names the url that may take it with others (not sent on).
BATCH_HEADER = "X-Outbox-Batch"
# Answers of our own API that say this worker's credentials are wrong.
CONFIG_ERROR_STATUSES = frozenset({401, 403})
# Delivery results (the `result` label of insurance_worker_deliveries_total).
OK, REJECTED, RETRY, CONFIG_ERROR = "ok", "rejected", "retry", "config_error"
# Answers after which outbox.record_deliveries puts a row back in the queue (with no answer and 5xx).
RETRIED_STATUSES = frozenset({408, 409, 425, 429})
# A delivery ends this long (at most a quarter of the lease) before its lease does, so that its
# outcome is recorded while the row is still this worker's: a slow peer is never delivered twice.
LEASE_MARGIN_SECONDS = 10.0


def delivery_deadline(lease_seconds: float, total_timeout: float, own_api: bool) -> float:
    """The TOTAL time one delivery may take, connection to last byte. Our own API answers a
    dispatch once its provider calls end (HTTP_TOTAL_TIMEOUT, app/orchestrator/pipeline.py), so
    it gets the whole lease but the margin; any other peer (chat, partner webhooks) gets
    HTTP_TOTAL_TIMEOUT, and never more than that."""
    cap = lease_seconds - min(LEASE_MARGIN_SECONDS, lease_seconds / 4)
    return cap if own_api else min(total_timeout, cap)


class DeadlineExceeded(Exception):
    """A delivery's total deadline passed: no answer (the row is retried with backoff)."""


class Worker:
    def __init__(self, config: Config, concurrency: int = 64, batch: int = 100,
                 poll_interval: float = 1.0, lease_seconds: int = 60, grace_seconds: float = 20.0,
                 dispatch_batch: int = 25, metrics_port: int = 0, metrics_host: str = "127.0.0.1") -> None:
        self.config = config
        self.name = PROCESS_NAME
        self.concurrency = concurrency
        self.batch = batch
        self.dispatch_batch = max(1, dispatch_batch)
        self.poll_interval = poll_interval
        self.lease_seconds = lease_seconds
        self.grace_seconds = grace_seconds
        # Its own queue: it waits its turn (no acquire timeout).
        self.db = Database(config.database_url, 1, 3, config.db_statement_cache_size, acquire_timeout=None)
        self.tokens = service_tokens(config.secret("SERVICE_ROLE_SECRET"))
        self._token: tuple[str, float] = ("", 0.0)
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._inflight: dict[int, asyncio.Task] = {}
        self._results: list[dict[str, Any]] = []
        self._results_ready = asyncio.Event()
        self._listener: asyncpg.Connection | None = None
        self.delivered = 0
        self.results: collections.Counter[str] = collections.Counter()  # deliveries by result
        self.metrics_port = metrics_port
        self.metrics_host = metrics_host
        self._deliveries = self._claim_size = None  # prometheus-client's, with --metrics-port
        self._webhook_results = None                 # insurance_webhook_deliveries_total, likewise
        self.webhooks: Deliverer | None = None       # partner webhooks (app/webhooks.py), in run()

    # -- lifecycle -----------------------------------------------------------------------
    def stop(self) -> None:
        if not self._stopping.is_set():
            log.info("worker_stopping", inflight=len(self._inflight))
        self._stopping.set()
        self._wake.set()

    def _serve_metrics(self) -> None:
        """/metrics on metrics_port (a thread of prometheus-client's), when one is given."""
        from prometheus_client import start_http_server

        from app.metrics import worker_metrics
        self._deliveries, self._claim_size = worker_metrics(lambda: len(self._inflight))
        from app.metrics import webhook_metrics
        self._webhook_results = webhook_metrics()
        start_http_server(self.metrics_port, addr=self.metrics_host)
        log.info("worker_metrics", url=f"http://{self.metrics_host}:{self.metrics_port}/metrics")

    async def run(self) -> None:
        if self.metrics_port:
            self._serve_metrics()
        await self.db.open()
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        # The API answers a dispatch once its provider calls end (HTTP_TOTAL_TIMEOUT at most).
        timeout = httpx.Timeout(max(self.config.http_read_timeout, self.config.http_total_timeout + 15),
                                connect=self.config.http_connect_timeout)
        async with httpx.AsyncClient(limits=limits, timeout=timeout) as self.client, \
                self._webhook_client() as webhook_client:
            self.webhooks = self._webhook_deliverer(webhook_client)
            flusher = asyncio.create_task(self._flush_loop())
            log.info("worker_started", name=self.name, api=self.config.public_base_url,
                     concurrency=self.concurrency, batch=self.batch,
                     wakes_on="notify" if self.config.database_listen_url else "poll")
            try:
                await self._claim_loop()
            finally:
                await self._drain()
                flusher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await flusher
                await self._flush()
                if self._listener is not None and not self._listener.is_closed():
                    await self._listener.close()
                await self.db.close()
        log.info("worker_stopped", delivered=self.delivered)

    async def _listen(self) -> None:
        """LISTEN on a connection of its own (DATABASE_LISTEN_URL: direct, never through
        PgBouncer's transaction pooling, which would drop the notifications); without one,
        the worker polls every poll interval."""
        if not self.config.database_listen_url:
            return
        if self._listener is not None and not self._listener.is_closed():
            return
        try:
            self._listener = await asyncpg.connect(self.config.database_listen_url)
            await self._listener.add_listener("outbox", self._on_notify)
        except DATABASE_ERRORS as exc:
            self._listener = None
            log.warning("worker_listen_failed", error=type(exc).__name__)

    def _on_notify(self, conn, pid, channel, payload: str) -> None:
        if not payload or float(payload) <= time.time():
            self._wake.set()
        else:
            self._schedule_wake(float(payload))

    def _schedule_wake(self, at_epoch: float) -> None:
        delay = max(0.0, at_epoch - time.time())
        if delay < self.poll_interval:
            asyncio.get_running_loop().call_later(delay, self._wake.set)

    # -- claiming ------------------------------------------------------------------------
    async def _claim_loop(self) -> None:
        while not self._stopping.is_set():
            await self._listen()
            # Webhook rows waiting for their endpoint's turn hold no slot (app/webhooks.py).
            free = self.concurrency - self._busy()
            claimed = 0
            if free > 0:
                try:
                    raw = await self.db.call(SERVICE, None, "outbox.claim_batch", self.name,
                                             min(free, self.batch), self.lease_seconds)
                except DATABASE_ERRORS as exc:
                    log.warning("worker_claim_failed", error=type(exc).__name__)
                    await self._sleep(self.poll_interval)
                    continue
                data = orjson.loads(raw)
                batches: dict[str, list[dict[str, Any]]] = {}
                for row in data["requests"]:
                    batch_url = (row.get("headers") or {}).pop(BATCH_HEADER, None)
                    if Deliverer.is_webhook(row):
                        self._inflight[row["id"]] = asyncio.create_task(self._deliver_webhook(row))
                    elif batch_url and row["url"].startswith("/"):
                        batches.setdefault(batch_url, []).append(row)
                    else:
                        self._inflight[row["id"]] = asyncio.create_task(self._deliver(row))
                for batch_url, rows in batches.items():
                    for i in range(0, len(rows), self.dispatch_batch):
                        chunk = rows[i:i + self.dispatch_batch]
                        task = asyncio.create_task(self._deliver_batch(batch_url, chunk))
                        for row in chunk:
                            self._inflight[row["id"]] = task
                claimed = len(data["requests"])
                if self._claim_size is not None:
                    self._claim_size.observe(claimed)
                if data["nextDueAt"] is not None:
                    self._schedule_wake(data["nextDueAt"])
            if claimed and claimed == min(free, self.batch) and self._busy() < self.concurrency:
                continue  # more may be due right now
            await self._sleep(self.poll_interval)

    def _busy(self) -> int:
        """Deliveries holding a slot: webhook rows waiting for their endpoint's turn hold none
        (app/webhooks.py), so one slow partner's backlog never stops the claims."""
        return len(self._inflight) - (self.webhooks.waiting if self.webhooks else 0)

    async def _sleep(self, seconds: float) -> None:
        await wait_event(self._wake, seconds)
        self._wake.clear()

    # -- delivering ----------------------------------------------------------------------
    def _bearer(self) -> str:
        token, expires = self._token
        if time.time() > expires - 600:
            token = self.tokens.issue("outbox-worker")
            self._token = (token, time.time() + self.tokens.lifetime)
        return token

    async def _send(self, method: str, url: str, headers: dict[str, str], content: bytes,
                    own_api: bool) -> httpx.Response:
        """One outbound request of a delivery, answer read whole, within its total deadline
        (delivery_deadline): every delivery goes through here. Raises DeadlineExceeded, or
        httpx's errors."""
        seconds = delivery_deadline(self.lease_seconds, self.config.http_total_timeout, own_api)
        try:
            async with asyncio.timeout(seconds):
                return await self.client.request(method, url, headers=headers, content=content)
        except TimeoutError:
            raise DeadlineExceeded(f"no complete answer within {seconds:g} s (total deadline, "
                                   f"shorter than the {self.lease_seconds} s lease)") from None

    async def _deliver(self, row: dict[str, Any]) -> None:
        url: str = row["url"]
        headers = {str(k): str(v) for k, v in (row.get("headers") or {}).items()}
        if url.startswith("/"):
            url = self.config.public_base_url + url
            headers["Authorization"] = f"Bearer {self._bearer()}"
        headers.setdefault("Content-Type", "application/json")
        headers["X-Request-Id"] = f"outbox-{row['id']}-{row['attempts']}"
        status: int | None = None
        error: str | None = None
        try:
            resp = await self._send(row["method"], url, headers, orjson.dumps(row.get("body")),
                                    own_api=row["url"].startswith("/"))
            status = resp.status_code
            if status >= 300:
                error = resp.text[:500]
        except DeadlineExceeded as exc:
            error = str(exc)
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"[:500]
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bad row must not stop the worker
            error = f"{type(exc).__name__}"
        if self._finish(row["id"], status, error, own_api=row["url"].startswith("/")) == CONFIG_ERROR:
            _log_config_error(status, 1)
        self._inflight.pop(row["id"], None)
        if len(self._results) >= 32:
            self._results_ready.set()
        if len(self._inflight) <= self.concurrency // 2:
            self._wake.set()

    # -- partner webhooks (app/webhooks.py holds the protocol) -----------------------------
    def _webhook_client(self) -> httpx.AsyncClient:
        """A client of their own: partners' endpoints never share the API's connection pool,
        and nothing is followed (redirects) or trusted from the environment (proxies)."""
        return httpx.AsyncClient(follow_redirects=False, trust_env=False,
                                 timeout=httpx.Timeout(self.config.webhook_timeout),
                                 limits=httpx.Limits(max_connections=self.concurrency,
                                                     max_keepalive_connections=16))

    def _webhook_deliverer(self, client: httpx.AsyncClient) -> Deliverer:
        async def fetch(channel: str) -> dict[str, Any]:
            raw = await self.db.call(SERVICE, None, "webhooks.signing_salts", channel,
                                     self.config.webhook_secret_overlap)
            return orjson.loads(raw)

        def count(result: str) -> None:
            self.results["webhook_" + result] += 1
            if self._webhook_results is not None:
                self._webhook_results.labels(result).inc()

        config = self.config
        return Deliverer(client, SecretCache(config.secret("WEBHOOK_SECRET_KEY"), fetch),
                         public_only=config.webhooks_public_only, timeout=config.webhook_timeout,
                         retry_base=config.webhook_retry_base_seconds, retry_cap=config.webhook_retry_cap_seconds,
                         per_endpoint=config.webhook_endpoint_concurrency, on_result=count,
                         max_wait=self.lease_seconds / 3, max_waiting=self.concurrency * 16)

    async def _deliver_webhook(self, row: dict[str, Any]) -> None:
        try:
            result = await self.webhooks.deliver(row)
        except asyncio.CancelledError:
            raise
        except DATABASE_ERRORS as exc:  # the secrets could not be read: try again soon, no attempt lost
            result = {"id": row["id"], "status": None, "error": None, "defer": 2}
            log.warning("worker_webhook_secrets_failed", error=type(exc).__name__)
        except Exception as exc:  # a bad row must not stop the worker
            result = {"id": row["id"], "status": None, "error": type(exc).__name__, "retry": True}
        self._results.append(result)
        self._inflight.pop(row["id"], None)
        if len(self._results) >= 32:
            self._results_ready.set()
        if self._busy() <= self.concurrency // 2:
            self._wake.set()

    async def _deliver_batch(self, batch_url: str, rows: list[dict[str, Any]]) -> None:
        """Several deliveries in one request of the outbox batch protocol, to the API's `batch_url`."""
        if len(rows) == 1:
            return await self._deliver(rows[0])
        body = {"requests": [{"id": r["id"], "path": r["url"], "body": r.get("body")} for r in rows]}
        headers = {"Authorization": f"Bearer {self._bearer()}", "Content-Type": "application/json",
                   "X-Request-Id": f"outbox-batch-{rows[0]['id']}-{len(rows)}"}
        outcome: dict[int, tuple[int | None, str | None]] = {}
        try:
            resp = await self._send("POST", self.config.public_base_url + batch_url, headers,
                                    orjson.dumps(body), own_api=True)
            if resp.status_code == 200:
                for result in orjson.loads(resp.content)["data"]["results"]:
                    status = result.get("status")
                    error = orjson.dumps(result["error"]).decode() if result.get("error") else None
                    outcome[result["id"]] = (status, error)
            else:
                outcome = {r["id"]: (resp.status_code, resp.text[:500]) for r in rows}
        except DeadlineExceeded as exc:
            outcome = {r["id"]: (None, str(exc)) for r in rows}
        except httpx.HTTPError as exc:
            outcome = {r["id"]: (None, f"{type(exc).__name__}: {exc}"[:500]) for r in rows}
        except (ValueError, KeyError, TypeError) as exc:
            outcome = {r["id"]: (None, f"unreadable batch answer: {type(exc).__name__}") for r in rows}
        refused = 0
        for row in rows:
            status, error = outcome.get(row["id"], (None, "missing from the batch answer"))
            refused += self._finish(row["id"], status, error, own_api=True) == CONFIG_ERROR
            self._inflight.pop(row["id"], None)
        if refused:
            _log_config_error(outcome.get(rows[0]["id"], (None, None))[0], refused)
        self._results_ready.set()
        if len(self._inflight) <= self.concurrency // 2:
            self._wake.set()

    def _finish(self, row_id: int, status: int | None, error: str | None, own_api: bool) -> str:
        """Queue a row's outcome for outbox.record_deliveries; returns its result name."""
        result = {"id": row_id, "status": status, "error": error}
        if own_api and status in CONFIG_ERROR_STATUSES:
            result["retry"] = True  # not a delivery: kept for a worker with the right secret
            name = CONFIG_ERROR
        elif status is None or status >= 500 or status in RETRIED_STATUSES:
            name = RETRY
        else:
            name = OK if status < 400 else REJECTED
        self._results.append(result)
        self.results[name] += 1
        if self._deliveries is not None:
            self._deliveries.labels(name).inc()
        return name

    async def _flush_loop(self) -> None:
        while True:
            await wait_event(self._results_ready, 0.02)
            self._results_ready.clear()
            if not await self._flush():
                await asyncio.sleep(0.5)  # the database is away: do not spin on it

    async def _flush(self) -> bool:
        """Record the delivered rows; False when the database could not be reached."""
        if not self._results:
            return True
        results, self._results = self._results, []
        try:
            await self.db.call(SERVICE, None, "outbox.record_deliveries", self.name,
                               orjson.dumps(results).decode(), self.config.outbox_max_attempts)
            self.delivered += len(results)
            return True
        except asyncio.CancelledError:
            self._results = results + self._results  # recorded by the last flush at shutdown
            raise
        except DATABASE_ERRORS as exc:
            # Kept for the next flush (a restarting database is back in seconds); should this
            # worker die first, the leases expire and the rows are delivered again.
            self._results = results + self._results
            log.warning("worker_record_failed", error=type(exc).__name__, rows=len(results))
            return False

    async def _drain(self) -> None:
        """Finish what is in flight (up to the grace period); give back the rest."""
        if not self._inflight:
            return
        done, pending = await asyncio.wait(set(self._inflight.values()), timeout=self.grace_seconds)
        if pending:
            ids = list(self._inflight)  # what is still here did not finish
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            try:
                await self.db.call(SERVICE, None, "outbox.release", self.name, ids)
            except DATABASE_ERRORS:
                pass  # the leases expire instead
            log.info("worker_released", rows=len(ids))


def _log_config_error(status: int | None, rows: int) -> None:
    log.error("worker_config_error", status=status, rows=rows,
              hint="the API refused this worker's SERVICE_ROLE_SECRET: the rows stay queued for a "
                   "worker that holds the API's own")


def worker(args) -> int:
    from app.cli import config_or_exit
    from app.logging import configure

    config = config_or_exit(require_mode=True)
    configure(config.log_level)
    if not config.development and "SERVICE_ROLE_SECRET" in config.generated_secrets:
        # A secret of its own would make the API refuse every delivery of this worker.
        from app.cli import fail
        fail("SERVICE_ROLE_SECRET is not set: a worker outside development needs the API's own", code=2)
    w = Worker(config, concurrency=args.concurrency or config.worker_concurrency,
               batch=args.batch, poll_interval=args.poll_interval or config.worker_poll_interval,
               lease_seconds=args.lease_seconds or config.worker_lease_seconds,
               dispatch_batch=args.dispatch_batch or config.worker_dispatch_batch,
               metrics_port=args.metrics_port if args.metrics_port is not None else config.worker_metrics_port,
               metrics_host=args.metrics_host)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, w.stop)
        await w.run()

    try:
        import uvloop
        uvloop.run(main())
    except ImportError:
        asyncio.run(main())
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("worker", help="deliver the outbox (LISTEN outbox, claim, deliver)")
    p.add_argument("--concurrency", type=int, help="deliveries in flight at once (WORKER_CONCURRENCY, 64)")
    p.add_argument("--batch", type=int, default=100, help="rows claimed per round trip (default 100)")
    p.add_argument("--dispatch-batch", type=int,
                   help="emission deliveries sent to the API in one request (WORKER_DISPATCH_BATCH, 25)")
    p.add_argument("--poll-interval", type=float,
                   help="seconds between polls when no notification comes (WORKER_POLL_INTERVAL, 1)")
    p.add_argument("--lease-seconds", type=int,
                   help="how long a claimed row is ours; a dead worker's rows come back after it "
                        "(WORKER_LEASE_SECONDS, 60)")
    p.add_argument("--metrics-port", type=int,
                   help="serve /metrics (Prometheus) on this port (WORKER_METRICS_PORT; default none)")
    p.add_argument("--metrics-host", default="127.0.0.1", help="address of /metrics (default 127.0.0.1)")
    p.set_defaults(func=worker)
