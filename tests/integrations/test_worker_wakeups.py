"""How the worker learns of new outbox rows: LISTEN on DATABASE_LISTEN_URL, or polling.

`make test` runs this module a second time with DATABASE_URL through PgBouncer in
transaction pooling mode and DATABASE_LISTEN_URL direct (scripts/test.sh): a LISTEN made
through PgBouncer would never hear the notification, and only the poll would deliver.
"""
from __future__ import annotations

import contextlib
import time

from tests.fixtures.pipeline import final, wait_for


@contextlib.contextmanager
def worker_with(stack, **settings: str):
    env = stack.env
    stack.env = {**env, **settings}
    try:
        with stack.worker() as proc:
            yield proc
    finally:
        stack.env = env


def _listeners(admin) -> int:
    return admin.execute("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() "
                         "AND query LIKE 'LISTEN%%'").fetchone()["n"]


def test_a_notification_wakes_the_worker_long_before_its_poll(stack, admin, insert_items):
    before = _listeners(admin)
    with worker_with(stack, WORKER_POLL_INTERVAL="60"):
        wait_for(lambda: _listeners(admin) > before, 20, "the worker's LISTEN")
        time.sleep(0.5)  # past its first (empty) claim: from now on only a wake-up claims
        started = time.monotonic()
        [item] = insert_items()
        assert final(admin, item["id"], timeout=15)["status"] == "SUCCESS"
        assert time.monotonic() - started < 15  # the notification, not the 60 s poll


def test_without_listen_the_worker_delivers_by_polling(stack, admin, insert_items):
    before = _listeners(admin)
    with worker_with(stack, DATABASE_LISTEN_URL="none", WORKER_POLL_INTERVAL="0.3"):
        time.sleep(1.0)
        assert _listeners(admin) == before  # no LISTEN connection of its own
        [item] = insert_items()
        assert final(admin, item["id"], timeout=15)["status"] == "SUCCESS"
