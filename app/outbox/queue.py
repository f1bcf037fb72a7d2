"""The outbox as the worker sees it: the one object that calls SQL (as procrastinate's
JobManager is for its worker). The loop and the deliverers never name a SQL function.

    claim(size)      outbox.claim_batch: FOR UPDATE SKIP LOCKED + a lease in this worker's name
    add(outcomes)    keep delivered rows' outcomes for the next record()
    record()         outbox.record_timed_deliveries of everything kept, in one call
                     (record_deliveries, with the webhooks' answer times for the health chart)
    release(ids)     outbox.release: give back rows that could not finish (shutdown)

SigningSalts, beside it, is the webhook deliverer's one SQL call (webhooks.signing_salts: a
channel's current salts, from which app/webhooks.py derives its secrets).
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import asyncpg
import orjson
import structlog

from app.db import SERVICE, Database

# What a database outage or restart raises: a refused connection (OSError), a server error
# (e.g. 57P01 admin_shutdown), or a connection that closed mid-statement (InterfaceError).
DATABASE_ERRORS = (OSError, asyncpg.PostgresError, asyncpg.InterfaceError,
                   # no host of a multi-host URL is a primary yet (a failover under way); app/db.py
                   # turns the rest of a lost primary into DatabaseUnavailable, an OSError
                   asyncpg.exceptions.TargetServerAttributeNotMatched)

log = structlog.get_logger("app.worker")


@dataclass(slots=True)
class Claim:
    rows: list[dict[str, Any]]
    next_due_at: float | None  # epoch seconds of the next delayed row, when one is due soon


class OutboxQueue:
    def __init__(self, db: Database, name: str, lease_seconds: int, max_attempts: int) -> None:
        self.db = db
        self.name = name
        self.lease_seconds = lease_seconds
        self.max_attempts = max_attempts
        self._outcomes: list[dict[str, Any]] = []
        self.recorded = 0

    async def open(self) -> None:
        await self.db.open()

    async def close(self) -> None:
        await self.db.close()

    async def claim(self, size: int) -> Claim:
        """Lease up to `size` due rows to this worker. Raises DATABASE_ERRORS."""
        data = orjson.loads(await self.db.call(SERVICE, None, "outbox.claim_batch", self.name, size,
                                               self.lease_seconds))
        return Claim(data["requests"], data["nextDueAt"])

    def add(self, outcomes: list[dict[str, Any]]) -> int:
        """Keep outcomes ({id, status, error, retry?, retryIn?, defer?, ms?}) for record(); how many wait."""
        self._outcomes += outcomes
        return len(self._outcomes)

    @property
    def unrecorded(self) -> int:
        return len(self._outcomes)

    async def record(self) -> bool:
        """Record every kept outcome in one call; False when the database could not be reached
        (they are kept for the next call: a restarting database is back in seconds; should this
        worker die first, the leases expire and the rows are delivered again)."""
        if not self._outcomes:
            return True
        outcomes, self._outcomes = self._outcomes, []
        try:
            await self.db.call(SERVICE, None, "outbox.record_timed_deliveries", self.name,
                               orjson.dumps(outcomes).decode(), self.max_attempts)
        except asyncio.CancelledError:
            self._outcomes = outcomes + self._outcomes  # recorded by the last call at shutdown
            raise
        except DATABASE_ERRORS as exc:
            self._outcomes = outcomes + self._outcomes
            log.warning("worker_record_failed", error=type(exc).__name__, rows=len(outcomes))
            return False
        self.recorded += len(outcomes)
        return True

    async def release(self, ids: list[int]) -> None:
        """Give back rows this worker holds but will not finish; on a database error their
        leases expire instead."""
        try:
            await self.db.call(SERVICE, None, "outbox.release", self.name, ids)
        except DATABASE_ERRORS:
            pass


class SigningSalts:
    """A channel's webhook salts, read for the webhook deliverer (app/outbox/webhooks.py
    SecretCache); the previous one only within WEBHOOK_SECRET_OVERLAP (`overlap` seconds)."""

    def __init__(self, db: Database, overlap: int) -> None:
        self.db = db
        self.overlap = overlap

    async def __call__(self, channel: str) -> dict[str, Any]:
        """{"salts": [hex, ...]} of a channel's webhook secrets, newest first. Raises DATABASE_ERRORS."""
        return orjson.loads(await self.db.call(SERVICE, None, "webhooks.signing_salts", channel, self.overlap))
