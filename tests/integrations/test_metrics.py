"""Metrics of a known sequence through the real pipeline: one SUCCESS, one ABANDONED, one
outbox row left pending; the API's gauges and provider counters, the worker's own /metrics."""
from __future__ import annotations

import httpx

from tests.conftest import free_port, wait_http
from tests.fixtures.pipeline import final, wait_for
from tests.test_metrics import value


def scrape(url: str) -> str:
    resp = httpx.get(f"{url}/metrics")
    assert resp.status_code == 200, resp.text
    return resp.text


def pending(admin) -> int:
    return admin.execute("SELECT count(*) AS n FROM outbox.http_requests WHERE delivered_at IS NULL").fetchone()["n"]


def test_one_success_one_abandoned_one_pending(stack, admin, insert_items):
    before = scrape(stack.api)
    port = free_port()
    with stack.worker("--metrics-port", str(port)):
        wait_http(f"http://127.0.0.1:{port}/metrics")
        [ok] = insert_items()
        assert final(admin, ok["id"])["status"] == "SUCCESS"
        stack.fault(provider="PROVIDER_A", count=1, status=400)
        [bad] = insert_items()
        assert final(admin, bad["id"])["status"] == "ABANDONED"
        wait_for(lambda: pending(admin) == 0, what="the chat notices delivered")
        worker = scrape(f"http://127.0.0.1:{port}")
    [_waiting] = insert_items()  # no worker now: its dispatch stays in the outbox
    after = scrape(stack.api)

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("insurance_emissions", status="SUCCESS", provider="PROVIDER_A") == 1
    assert grew("insurance_emissions", status="ABANDONED", provider="PROVIDER_A") == 1
    assert value(after, "insurance_outbox_pending") == 1
    assert value(after, "insurance_outbox_oldest_pending_age_seconds") >= 0
    assert grew("insurance_outbox_dead") == 0  # other modules' fault tests may have left some
    assert grew("insurance_provider_calls_total", provider="PROVIDER_A", outcome="SUCCESS") == 1
    assert grew("insurance_provider_calls_total", provider="PROVIDER_A") == 2  # the 400's outcome is its code
    assert grew("insurance_provider_call_duration_seconds_count", provider="PROVIDER_A") == 2
    assert grew("insurance_http_requests_total", surface="integrations",
                route="/api/integrations/dispatch", method="POST", status="200") == 2

    assert value(worker, "insurance_worker_deliveries_total", result="ok") >= 3  # two dispatches, one chat notice
    assert value(worker, "insurance_worker_deliveries_total", result="retry") == 0
    assert value(worker, "insurance_worker_claim_batch_size_count") >= 2
    assert value(worker, "insurance_worker_inflight") == 0
