"""The worker's loop alone (app/outbox/worker.py), driven by a queue and deliverers of the test's
own: no database, no HTTP. It claims no more than its free slots, records every outcome once,
and at shutdown finishes what it can within the grace period and gives back the rest."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from app.outbox.queue import Claim
from app.outbox.worker import Worker


class FakeQueue:
    """Due rows in memory; what the loop records and releases."""

    def __init__(self, rows: int) -> None:
        self.due = [{"id": n, "url": f"/row/{n}"} for n in range(1, rows + 1)]
        self.claims: list[int] = []
        self.kept: list[dict[str, Any]] = []
        self.outcomes: list[dict[str, Any]] = []
        self.released: list[int] = []
        self.recorded = 0

    async def claim(self, size: int) -> Claim:
        rows, self.due = self.due[:size], self.due[size:]
        self.claims.append(len(rows))
        return Claim(rows, None)

    def add(self, outcomes: list[dict[str, Any]]) -> int:
        self.kept += outcomes
        return len(self.kept)

    async def record(self) -> bool:
        self.outcomes += self.kept
        self.recorded += len(self.kept)
        self.kept = []
        return True

    async def release(self, ids: list[int]) -> None:
        self.released += ids


class Sender:
    """A deliverer that answers 200 after `seconds`, or never when `seconds` is None."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.in_flight = 0
        self.most_in_flight = 0

    async def deliver(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.in_flight += len(rows)
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await (asyncio.sleep(self.seconds) if self.seconds is not None else asyncio.Event().wait())
        finally:
            self.in_flight -= len(rows)
        return [{"id": row["id"], "status": 200, "error": None} for row in rows]


class OneRowEach:
    """Routes each row alone to one sender; no webhook waits for its endpoint here."""

    def __init__(self, sender: Sender) -> None:
        self.sender = sender
        self.webhooks = SimpleNamespace(waiting=0)  # what the loop reads of Deliverers.webhooks

    def route(self, rows: list[dict[str, Any]]) -> list[tuple[Sender, list[dict[str, Any]]]]:
        return [(self.sender, [row]) for row in rows]


def worker(queue: FakeQueue, sender: Sender, grace: float = 5.0) -> Worker:
    return Worker(queue, OneRowEach(sender), concurrency=4, batch=3, poll_interval=0.05, grace_seconds=grace)


def test_every_row_is_delivered_and_recorded_once_within_the_slots():
    queue, sender = FakeQueue(rows=20), Sender(0.01)
    loop = worker(queue, sender)

    async def run() -> None:
        task = asyncio.create_task(loop.run())
        for _ in range(200):
            await asyncio.sleep(0.02)
            if queue.recorded == 20:
                break
        loop.stop()
        await task

    asyncio.run(run())
    assert sorted(o["id"] for o in queue.outcomes) == list(range(1, 21)), "each row's outcome recorded once"
    assert sender.most_in_flight <= 4, "never more rows in flight than the concurrency"
    assert max(queue.claims) <= 3, "never more rows claimed at once than the batch"
    assert queue.released == []


def test_at_shutdown_what_cannot_finish_within_the_grace_period_is_given_back():
    queue, sender = FakeQueue(rows=2), Sender(None)  # deliveries that never end
    loop = worker(queue, sender, grace=0.2)

    async def run() -> None:
        task = asyncio.create_task(loop.run())
        while sender.in_flight < 2:
            await asyncio.sleep(0.01)
        loop.stop()
        await asyncio.wait_for(task, timeout=5)

    asyncio.run(run())
    assert sorted(queue.released) == [1, 2], "the rows still in flight go back to the queue"
    assert queue.outcomes == [], "nothing is recorded for a delivery that did not end"
