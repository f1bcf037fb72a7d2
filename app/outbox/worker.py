"""The worker's loop: delivers the outbox (outbox.http_requests) that the database fills.

    LISTEN outbox ──► claim a batch (OutboxQueue.claim: FOR UPDATE SKIP LOCKED + lease)
                 ──► route the rows to their deliverer, deliver concurrently
                 ──► _done: keep the outcomes, record them in batches (OutboxQueue.record)

Rooms, as procrastinate's worker has them: app/outbox/queue.py alone calls SQL (claim,
record, release), app/outbox/deliverers.py sends rows (`deliver(rows) -> outcomes`: our own
API's batches, a plain call, partner webhooks), and this loop between them keeps the wake-ups,
the in-flight rows and their one end (`_done`). It only loops: app/outbox/build.py makes the
pool, the clients, the metrics and the deliverers and hands them to it, so a test can drive it
with a queue and deliverers of its own.

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
import contextlib
import time
from typing import Any, Protocol

import asyncpg
import structlog

from app.db import CONNECT_TIMEOUT
from app.outbox.deliverers import Deliverer, Deliverers
from app.outbox.queue import DATABASE_ERRORS, Claim

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


class Queue(Protocol):
    """What the loop needs of the outbox (app/outbox/queue.py OutboxQueue; a test's fake)."""
    recorded: int

    async def claim(self, size: int) -> Claim: ...
    def add(self, outcomes: list[dict[str, Any]]) -> int: ...
    async def record(self) -> bool: ...
    async def release(self, ids: list[int]) -> None: ...


class Worker:
    """The loop over a queue and its deliverers (app/outbox/build.py build_worker makes both).
    `listen_url`: LISTEN outbox on a connection of its own; "" polls every `poll_interval`.
    `claim_sizes`: a histogram of rows per claim (prometheus-client's), when metrics are served."""

    def __init__(self, queue: Queue, deliverers: Deliverers, *, concurrency: int, batch: int,
                 poll_interval: float, grace_seconds: float, listen_url: str = "",
                 claim_sizes: Any = None, name: str = "worker") -> None:
        self.queue = queue
        self.deliverers = deliverers
        self.name = name
        self.concurrency = concurrency
        self.batch = batch
        self.poll_interval = poll_interval
        self.grace_seconds = grace_seconds
        self.listen_url = listen_url
        self._claim_size = claim_sizes
        self._wake = asyncio.Event()
        self._needs_slots = False  # the claims wait for deliveries to end, not for new rows
        self._stopping = asyncio.Event()
        self._inflight: dict[int, asyncio.Task] = {}
        self._results_ready = asyncio.Event()
        self._listener: asyncpg.Connection | None = None

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

    @property
    def inflight(self) -> int:
        """Rows in flight (the insurance_worker_inflight gauge reads it at scrape time)."""
        return len(self._inflight)

    async def run(self) -> None:
        """Claim and deliver until stop(); then finish what is in flight (up to the grace
        period), record it, and give back the rest."""
        flusher = asyncio.create_task(self._flush_loop())
        log.info("worker_started", name=self.name, concurrency=self.concurrency, batch=self.batch,
                 wakes_on="notify" if self.listen_url else "poll")
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
        log.info("worker_stopped", delivered=self.delivered)

    async def _listen(self) -> None:
        """LISTEN on a connection of its own (DATABASE_LISTEN_URL: direct, never through
        PgBouncer's transaction pooling, which would drop the notifications); without one,
        the worker polls every poll interval."""
        if not self.listen_url:
            return
        if self._listener is not None and not self._listener.is_closed():
            return
        try:
            # Several hosts with target_session_attrs=read-write: the primary, whichever it is
            # now; a listener lost in a failover is closed and found again on the next round.
            self._listener = await asyncpg.connect(self.listen_url, timeout=CONNECT_TIMEOUT)
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
        (app/outbox/webhooks.py), so one slow partner's backlog never stops the claims."""
        return len(self._inflight) - self.deliverers.webhooks.waiting

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

