"""Reliability: PostgreSQL restarts in the middle of a batch; nothing is lost or issued twice.

It restarts the cluster, so it runs in a pytest invocation of its own (marker
`restarts_postgres`, run first and alone by scripts/test.sh): the session's other connections would not
survive it. It needs root (pg_ctlcluster), as on CI and `make test` machines.
"""
from __future__ import annotations

import os
import subprocess

import psycopg
import pytest
from psycopg.rows import dict_row

from tests.fixtures.pipeline import wait_for

pytestmark = pytest.mark.restarts_postgres

CLUSTER = os.environ.get("PG_CLUSTER", "15 main").split()


def count(sql: str, *params) -> int:
    """A fresh connection per question: the test's own connections die with the restart."""
    try:
        with psycopg.connect(os.environ["ADMIN_DATABASE_URL"], row_factory=dict_row, connect_timeout=2) as conn:
            return conn.execute(sql, params).fetchone()["n"]
    except psycopg.OperationalError:
        return -1  # the database is restarting


@pytest.mark.needs_root  # pg_ctlcluster restarts the cluster as postgres
def test_postgres_restart_mid_batch_loses_and_doubles_nothing(stack, insert_items):
    stack.fault(provider="PROVIDER_A", count=200, delay=0.3)  # slow enough to be mid-batch
    items = insert_items(200)
    ids = [i["id"] for i in items]
    keys = {f"{i['uid']}:PROVIDER_A:SALES_DISPATCH" for i in items}

    def issued() -> int:
        return len({r["idempotencyKey"] for r in stack.requests("PROVIDER_A")} & keys)

    with stack.worker("--concurrency", "8") as worker:
        wait_for(lambda: issued() >= 20, what="a part of the batch")
        assert issued() < 150, "the batch was nearly done before the restart: the test proves little"
        subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", *CLUSTER, "restart", "-m", "fast"],
                       check=True, capture_output=True)
        wait_for(lambda: count("SELECT count(*) AS n FROM insurance.integration_emissions "
                               "WHERE risk_item_id = ANY(%s) AND status = 'SUCCESS'", ids) == 200,
                 timeout=120, what="200 SUCCESS emissions after the restart")
        assert worker.poll() is None, "the worker survived the restart"
    stack.clear_faults()
    assert issued() == 200
    created = [r for r in stack.requests("PROVIDER_A") if r["idempotencyKey"] in keys and r["status"] == 201]
    assert len(created) == 200, "the sandbox issued exactly one policy per item"
    with psycopg.connect(os.environ["ADMIN_DATABASE_URL"], row_factory=dict_row) as conn:
        rows = conn.execute("SELECT e.external_id, i.metadata #>> '{integration,externalId}' AS meta "
                            "FROM insurance.integration_emissions e JOIN insurance.risk_items i ON i.id = e.risk_item_id "
                            "WHERE e.risk_item_id = ANY(%s)", (ids,)).fetchall()
    assert len(rows) == 200 and all(r["external_id"] and r["external_id"] == r["meta"] for r in rows)
