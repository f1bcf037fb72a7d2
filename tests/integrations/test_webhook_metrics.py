"""The operator's view of partner webhooks: the worker's insurance_webhook_deliveries_total{result}
and the API's webhook gauges. A module of its own: the worker here is the only one, so its
counters see every delivery."""
from __future__ import annotations

import httpx

from tests.conftest import free_port
from tests.fixtures.pipeline import wait_for
from tests.integrations.test_webhooks import delivery_rows, insert_items, make_partner, received, sandbox_hook, wstack  # noqa: F401


def test_metrics_count_deliveries_by_result_and_the_oldest_pending_age(wstack, admin, make_package):  # noqa: F811 - the fixture imported above
    port = free_port()
    down = f"http://127.0.0.1:{free_port()}/hook"
    name, url = sandbox_hook(wstack)
    ok = make_partner(wstack, make_package, [url])
    failing = make_partner(wstack, make_package, [down])
    with wstack.worker("--metrics-port", str(port)):
        insert_items(admin, ok, ok["package"])
        insert_items(admin, failing, failing["package"])
        wait_for(lambda: received(wstack, name), what="the delivered one")
        wait_for(lambda: (rows := delivery_rows(admin, failing["id"])) and rows[0]["last_error"], what="the failed try")

        def counted() -> dict[str, float]:
            try:
                text = httpx.get(f"http://127.0.0.1:{port}/metrics").text
            except httpx.HTTPError:
                return {}
            return {line.split('"')[1]: float(line.split()[-1]) for line in text.splitlines()
                    if line.startswith("insurance_webhook_deliveries_total{")}
        found = wait_for(lambda: (c := counted()) and c.get("delivered", 0) >= 1 and c.get("unreachable", 0) >= 1 and c,
                         what="the worker's counters")
        assert found["delivered"] >= 1 and found["unreachable"] >= 1
    api = httpx.get(f"{wstack.api}/metrics").text
    gauges = {line.split()[0]: float(line.split()[1]) for line in api.splitlines()
              if line.startswith("insurance_webhook_") and not line.startswith("#")}
    assert gauges["insurance_webhook_pending"] >= 1, api
    assert "insurance_webhook_oldest_pending_age_seconds" in gauges and "insurance_webhook_dead" in gauges
