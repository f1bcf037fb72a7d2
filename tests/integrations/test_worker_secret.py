"""A worker with the wrong service secret loses nothing (issue 12): the API answers its
deliveries 401, which is a configuration error and never a delivery, so the rows stay queued
for a worker that holds the right secret. Its own module: no other worker may run meanwhile."""
from __future__ import annotations

import re

import httpx

from tests.conftest import free_port, running
from tests.fixtures.pipeline import start_stack, wait_for
from tests.integrations.test_faults import SETTINGS


def _outbox_rows(admin, ids: list[int]) -> list[dict]:
    return admin.execute("SELECT * FROM outbox.http_requests WHERE url = '/api/integrations/dispatch' "
                         "AND (body #>> '{record,id}')::bigint = ANY(%s)", (ids,)).fetchall()


def test_a_worker_with_a_wrong_secret_loses_nothing(admin, insert_items, make_package):
    with start_stack(**SETTINGS) as stack:
        package = make_package(variants=("travel",), sales="PROVIDER_A")
        wrong = {**stack.env, "SERVICE_ROLE_SECRET": "a-wrong-secret-0123456789abcdef0123456789"}
        port = free_port()
        with running(["worker", "--metrics-port", str(port)], wrong):
            items = insert_items(3, package=package)
            ids = [i["id"] for i in items]
            rows = wait_for(lambda: (r := _outbox_rows(admin, ids)) and all(x["last_status"] == 401 for x in r) and r,
                            15, "the API refusing the wrong worker")
            metrics = httpx.get(f"http://127.0.0.1:{port}/metrics").text
            counted = re.search(r'^insurance_worker_deliveries_total\{result="config_error"\} (\S+)$', metrics, re.MULTILINE)
            assert counted and float(counted.group(1)) >= 3, "counted as configuration errors"
            assert 'insurance_worker_deliveries_total{result="ok"}' not in metrics, "and never as deliveries"
        assert all(r["delivered_at"] is None and r["dead_at"] is None for r in rows), "refused rows stay queued"
        assert admin.execute("SELECT count(*) AS n FROM insurance.integration_emissions WHERE risk_item_id = ANY(%s)",
                             (ids,)).fetchone()["n"] == 0
        with stack.worker():
            wait_for(lambda: admin.execute(
                "SELECT count(*) AS n FROM insurance.integration_emissions WHERE risk_item_id = ANY(%s) "
                "AND status = 'SUCCESS'", (ids,)).fetchone()["n"] == 3, 20, "the right worker delivering them")
        assert all(r["delivered_at"] is not None and r["last_status"] == 200 for r in _outbox_rows(admin, ids))
