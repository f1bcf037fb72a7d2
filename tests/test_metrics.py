"""GET /metrics of the API: who may read it, labels by route template, processes that add up."""
from __future__ import annotations

import time

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import child_environ, free_port, running


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """{(sample name, labels): value} of an exposition."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(text: str, name: str, **labels: str) -> float:
    """The sum of the samples named `name` whose labels include `labels` (0 when none)."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples(text).items() if n == name and want <= ls)


async def test_metrics_answer_only_the_allowed_addresses(client):
    resp = await client.simulate_get("/metrics", remote_addr="10.1.2.3")
    assert resp.status_code == 403
    assert resp.json["error"]["code"] == "FORBIDDEN"
    assert "insurance_" not in resp.text
    resp = await client.simulate_get("/metrics")  # from 127.0.0.1
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/plain")


async def test_requests_are_counted_by_route_template_never_the_raw_path(client):
    for item in (11111, 22222):
        await client.simulate_get(f"/api/postsales/v1/risk-items/{item}")  # refused: no token
    text = (await client.simulate_get("/metrics")).text
    route = "/api/postsales/v1/risk-items/{riskItemId}"
    assert value(text, "insurance_http_requests_total", surface="postsales", route=route, method="GET") >= 2
    assert value(text, "insurance_http_request_duration_seconds_count", surface="postsales", route=route,
                 method="GET") >= 2
    assert "risk-items/11111" not in text and "risk-items/22222" not in text


async def test_an_unknown_path_is_one_label_not_one_per_path(client):
    await client.simulate_get("/no/such/path/12345")
    text = (await client.simulate_get("/metrics")).text
    assert value(text, "insurance_http_requests_total", route="(unmatched)", status="404") >= 1
    assert "/12345" not in text


async def test_the_database_gauges_are_in_every_scrape(client):
    text = (await client.simulate_get("/metrics")).text
    names = {family.name for family in text_string_to_metric_families(text)}
    assert {"insurance_database_up", "insurance_outbox_pending", "insurance_outbox_oldest_pending_age_seconds",
            "insurance_outbox_dead", "insurance_emissions", "insurance_retry_sweep_last_run_timestamp_seconds"} <= names
    assert value(text, "insurance_database_up") == 1
    # The WAL archiver (pg_stat_archiver), for the backup alerts: the shared test cluster archives nothing.
    assert {"insurance_wal_archiving_enabled", "insurance_wal_archived", "insurance_wal_archive_failures",
            "insurance_wal_last_archived_timestamp_seconds"} <= names
    assert value(text, "insurance_wal_archiving_enabled") in (0, 1)


def test_serve_with_two_processes_counts_every_request_once():
    """Each request is answered by one of two processes; every scrape (whichever process
    answers it) adds up both."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with running(["serve", "--port", str(port), "--workers", "2"], child_environ(PORT=str(port)), f"{base}/healthz"), \
            httpx.Client(base_url=base) as http:
            # The start-up's own /healthz calls reach the shared files within a second of
            # each other process's flush: wait until the count stands still.
            before = None
            for _ in range(10):
                time.sleep(1.2)
                now = value(http.get("/metrics").text, "insurance_http_requests_total", route="/healthz")
                if now == before:
                    break
                before = now
            for _ in range(60):
                # A new connection each time, so that both processes get some.
                with httpx.Client(base_url=base) as one:
                    assert one.get("/healthz").status_code == 200
            time.sleep(1.5)  # each process adds its counts to the shared files within a second
            for _ in range(4):
                text = http.get("/metrics", headers={"Connection": "close"}).text
                assert value(text, "insurance_http_requests_total", route="/healthz") == before + 60


WORKER_FAMILIES = {"insurance_worker_deliveries", "insurance_worker_inflight", "insurance_worker_claim_batch_size"}


async def test_the_alert_rules_and_the_dashboard_name_only_metrics_that_exist(client):
    """deploy/: every insurance_* name in the alert rules and the Grafana dashboard is one the
    API's scrape or the worker's serves (a renamed metric would silence an alert)."""
    import json
    import re

    import yaml

    from tests.conftest import ROOT
    text = (await client.simulate_get("/metrics")).text
    served = {family.name for family in text_string_to_metric_families(text)} | WORKER_FAMILIES
    rules = yaml.safe_load((ROOT / "deploy/prometheus/alerts.yml").read_text())
    exprs = [rule["expr"] for group in rules["groups"] for rule in group["rules"]]
    dashboard = json.loads((ROOT / "deploy/grafana/insurance-backend.json").read_text())
    exprs += [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    assert len(exprs) > 10
    for expr in exprs:
        for name in re.findall(r"insurance_[a-z_]+", expr):
            family = re.sub(r"_(total|bucket|sum|count)$", "", name)
            assert family in served, f"{name} in {expr!r} is not a metric the service exposes"
    titles = {rule["alert"] for group in rules["groups"] for rule in group["rules"]}
    assert {"InsuranceOutboxBackingUp", "InsuranceOutboxDeadLetters", "InsuranceEmissionsAbandoned",
            "InsuranceRetrySweepStopped", "InsuranceWalArchiveFailing", "InsuranceWalArchiveStale"} <= titles
