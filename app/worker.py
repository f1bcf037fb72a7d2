"""`python -m app worker`: delivers the outbox (outbox.http_requests) that the database fills.

    LISTEN outbox ──► claim a batch (OutboxQueue.claim: FOR UPDATE SKIP LOCKED + lease)
                 ──► route the rows to their deliverer, deliver concurrently
                 ──► _done: keep the outcomes, record them in batches (OutboxQueue.record)

Three rooms, as procrastinate's worker has them: app/outbox/queue.py alone calls SQL (claim,
record, release), app/outbox/deliverers.py sends rows (`deliver(rows) -> outcomes`: our own
API's batches, a plain call, partner webhooks), and this loop between them keeps the wake-ups,
the in-flight rows and their one end (`_done`).

A row's url may be a path of the API: it goes to the API (PUBLIC_BASE_URL) with the
service-role bearer, which only this process holds. Delayed rows (deliver_after) wake the
worker at their time (the claim answers when the next one is due), and a poll interval covers
a lost notification, so a retry is never late by more than the poll interval.

Several workers may run at once. SIGTERM or SIGINT: stop claiming, finish what is in flight
(up to a grace period), record it, and give back what could not finish. A worker killed
outright loses nothing: its leases expire and another worker delivers the rows again (the
endpoints are idempotent on the emission key).
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import signal
import time
from typing import Any

import asyncpg
import structlog

from app.config import Config
from app.db import CONNECT_TIMEOUT, PROCESS_NAME, Database
from app.outbox.deliverers import ApiBatch, Deliverer, Deliverers, Http, PlainCall, Webhooks, api_client, webhook_client
from app.outbox.queue import DATABASE_ERRORS, OutboxQueue
from app.tokens import service_tokens
from app.webhooks import Deliverer as WebhookDeliverer, EndpointClients
from app.webhooks import SecretCache

log = structlog.get_logger("app.worker")

# Outcomes are recorded in one call when this many wait, else every RECORD_INTERVAL seconds
# (an outcome is recorded long before its lease ends: LEASE_MARGIN_SECONDS).
RECORD_BATCH = 64
RECORD_INTERVAL = 0.1


async def wait_event(event: asyncio.Event, seconds: float) -> None:
    """Until `event` is set or `seconds` pass. Not asyncio.wait_for: on Python 3.11 a cancel
    that meets its timeout can be lost, and the flusher then never stopped at shutdown
    (a worker hung after SIGTERM about one run in two)."""
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        pass


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
        self.queue = OutboxQueue(
            Database(config.database_url, 1, 3, config.db_statement_cache_size, acquire_timeout=None),
            self.name, lease_seconds, config.outbox_max_attempts, config.webhook_secret_overlap)
        self.tokens = service_tokens(config.secret("SERVICE_ROLE_SECRET"))
        self._wake = asyncio.Event()
        self._needs_slots = False  # the claims wait for deliveries to end, not for new rows
        self._stopping = asyncio.Event()
        self._inflight: dict[int, asyncio.Task] = {}
        self._results_ready = asyncio.Event()
        self._listener: asyncpg.Connection | None = None
        self.results: collections.Counter[str] = collections.Counter()  # deliveries by result
        self.metrics_port = metrics_port
        self.metrics_host = metrics_host
        self._deliveries = self._claim_size = None  # prometheus-client's, with --metrics-port
        self._webhook_results = None                 # insurance_webhook_deliveries_total, likewise
        self.deliverers: Deliverers | None = None    # in run(), with their HTTP clients

    @property
    def delivered(self) -> int:
        """Outcomes recorded so far."""
        return self.queue.recorded

    # -- lifecycle -----------------------------------------------------------------------
    def stop(self) -> None:
        if not self._stopping.is_set():
            log.info("worker_stopping", inflight=len(self._inflight))
        self._stopping.set()
        self._wake.set()

    def _serve_metrics(self) -> None:
        """/metrics on metrics_port (a thread of prometheus-client's), when one is given."""
        from prometheus_client import start_http_server

        from app.metrics import webhook_metrics, worker_metrics
        self._deliveries, self._claim_size = worker_metrics(lambda: len(self._inflight))
        self._webhook_results = webhook_metrics()
        start_http_server(self.metrics_port, addr=self.metrics_host)
        log.info("worker_metrics", url=f"http://{self.metrics_host}:{self.metrics_port}/metrics")

    async def run(self) -> None:
        if self.metrics_port:
            self._serve_metrics()
        await self.queue.open()
        async with api_client(self.concurrency, self.config) as client, \
                webhook_client(self.config.webhook_endpoint_concurrency,
                               self.config.webhook_timeout) as partners_client:
            self.deliverers = self._deliverers(client, partners_client)
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
                await self.queue.record()
                if self._listener is not None and not self._listener.is_closed():
                    await self._listener.close()
                await self.queue.close()
        log.info("worker_stopped", delivered=self.delivered)

    def _deliverers(self, client: Any, webhook_client: EndpointClients) -> Deliverers:
        def count(result: str) -> None:
            self.results[result] += 1
            if self._deliveries is not None:
                self._deliveries.labels(result).inc()

        def count_webhook(result: str) -> None:
            self.results["webhook_" + result] += 1
            if self._webhook_results is not None:
                self._webhook_results.labels(result).inc()

        config = self.config
        http = Http(client, config.public_base_url, self.tokens, self.lease_seconds,
                    config.http_total_timeout, count)
        webhooks = WebhookDeliverer(
            webhook_client, SecretCache(config.secret("WEBHOOK_SECRET_KEY"), self.queue.signing_salts),
            public_only=config.webhooks_public_only, timeout=config.webhook_timeout,
            retry_base=config.webhook_retry_base_seconds, retry_cap=config.webhook_retry_cap_seconds,
            per_endpoint=config.webhook_endpoint_concurrency, on_result=count_webhook,
            max_wait=self.lease_seconds / 3, max_waiting=self.concurrency * 16)
        return Deliverers(ApiBatch(http), PlainCall(http), Webhooks(webhooks), self.dispatch_batch)

    async def _listen(self) -> None:
        """LISTEN on a connection of its own (DATABASE_LISTEN_URL: direct, never through
        PgBouncer's transaction pooling, which would drop the notifications); without one,
        the worker polls every poll interval."""
        if not self.config.database_listen_url:
            return
        if self._listener is not None and not self._listener.is_closed():
            return
        try:
            # Several hosts with target_session_attrs=read-write: the primary, whichever it is
            # now; a listener lost in a failover is closed and found again on the next round.
            self._listener = await asyncpg.connect(self.config.database_listen_url, timeout=CONNECT_TIMEOUT)
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

    # -- the loop ------------------------------------------------------------------------
    async def _claim_loop(self) -> None:
        while not self._stopping.is_set():
            await self._listen()
            free = self.concurrency - self._busy()
            want = min(free, self.batch)
            claimed = 0
            if free > 0:
                try:
                    claim = await self.queue.claim(want)
                except DATABASE_ERRORS as exc:
                    log.warning("worker_claim_failed", error=type(exc).__name__)
                    await self._sleep(self.poll_interval)
                    continue
                for deliverer, rows in self.deliverers.route(claim.rows):
                    task = asyncio.create_task(self._deliver(deliverer, rows))
                    for row in rows:
                        self._inflight[row["id"]] = task
                claimed = len(claim.rows)
                if self._claim_size is not None:
                    self._claim_size.observe(claimed)
                if claim.next_due_at is not None:
                    self._schedule_wake(claim.next_due_at)
            # A full claim may have left rows behind: claim again while slots are free, else wait
            # for slots (_done wakes the loop). A short claim drained what is due: only a
            # notification, a delayed row's time or the poll brings more (a finished delivery
            # does not: waking on each one made an empty claim per webhook).
            if claimed and claimed == want and self._busy() < self.concurrency:
                continue  # more may be due right now
            self._needs_slots = free <= 0 or claimed == want
            await self._sleep(self.poll_interval)

    def _busy(self) -> int:
        """Deliveries holding a slot: webhook rows waiting for their endpoint's turn hold none
        (app/webhooks.py), so one slow partner's backlog never stops the claims."""
        return len(self._inflight) - (self.deliverers.webhooks.waiting if self.deliverers else 0)

    async def _sleep(self, seconds: float) -> None:
        await wait_event(self._wake, seconds)
        self._wake.clear()

    async def _deliver(self, deliverer: Deliverer, rows: list[dict[str, Any]]) -> None:
        try:
            outcomes = await deliverer.deliver(rows)
        except Exception as exc:  # a deliverer's defect must not stop the worker nor keep its rows
            log.exception("worker_deliverer_failed", deliverer=type(deliverer).__name__)
            outcomes = [{"id": r["id"], "status": None, "error": type(exc).__name__} for r in rows]
        self._done(rows, outcomes)

    def _done(self, rows: list[dict[str, Any]], outcomes: list[dict[str, Any]]) -> None:
        """The one end of every delivery: its outcomes kept for the next record, its rows out of
        flight, the flusher and the claims woken when there is work for them."""
        if self.queue.add(outcomes) >= RECORD_BATCH:
            self._results_ready.set()
        for row in rows:
            self._inflight.pop(row["id"], None)
        if self._needs_slots and self._busy() <= self.concurrency // 2:
            self._needs_slots = False
            self._wake.set()

    async def _flush_loop(self) -> None:
        while True:
            await wait_event(self._results_ready, RECORD_INTERVAL)
            self._results_ready.clear()
            if not await self.queue.record():
                await asyncio.sleep(0.5)  # the database is away: do not spin on it

    async def _drain(self) -> None:
        """Finish what is in flight (up to the grace period); give back the rest."""
        if not self._inflight:
            return
        _, pending = await asyncio.wait(set(self._inflight.values()), timeout=self.grace_seconds)
        if pending:
            ids = list(self._inflight)  # what is still here did not finish
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            await self.queue.release(ids)
            log.info("worker_released", rows=len(ids))


def worker(args) -> int:
    from app.cli import config_or_exit
    from app.logging import configure

    config = config_or_exit(require_mode=True)
    configure(config.log_level)
    if not config.development and "SERVICE_ROLE_SECRET" in config.generated_secrets:
        # A secret of its own would make the API refuse every delivery of this worker.
        from app.cli import fail
        fail("SERVICE_ROLE_SECRET is not set: a worker outside development needs the API's own", code=2)
    metrics_port = args.metrics_port if args.metrics_port is not None else config.worker_metrics_port
    if metrics_port and config.listen_problem(args.metrics_host):  # test mode: loopback only, as serve
        from app.cli import fail
        fail(config.listen_problem(args.metrics_host), code=2)
    w = Worker(config, concurrency=args.concurrency or config.worker_concurrency,
               batch=args.batch, poll_interval=args.poll_interval or config.worker_poll_interval,
               lease_seconds=args.lease_seconds or config.worker_lease_seconds,
               dispatch_batch=args.dispatch_batch or config.worker_dispatch_batch,
               metrics_port=metrics_port, metrics_host=args.metrics_host)

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
