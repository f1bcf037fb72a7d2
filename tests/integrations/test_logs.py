"""Logs an operator can follow: one JSON access line per request, and the risk item's uid on
every line the emission pipeline writes about it."""
from __future__ import annotations

import io

import orjson
import structlog


def lines(text: str) -> list[dict]:
    return [orjson.loads(line) for line in text.splitlines() if line.startswith("{")]


async def test_every_pipeline_line_of_an_emission_carries_the_risk_item_uid(client, services, make_package,
                                                                              make_risk_item):
    capture = structlog.testing.LogCapture()
    # The processors of app/logging.py that matter here: context variables, then the line.
    structlog.configure(processors=[structlog.contextvars.merge_contextvars, capture])
    try:
        item = make_risk_item(package=make_package(sales="PROVIDER_Z"))  # no adapter: UNKNOWN_PROVIDER
        resp = await client.simulate_post("/api/integrations/dispatch", json={"record": {"id": item["id"]}},
                                          headers={"Authorization": f"Bearer {services.service_tokens.issue('t')}"})
        assert resp.status_code == 200 and resp.json["data"]["status"] == "ABANDONED"
        logged = list(capture.entries)
    finally:
        structlog.reset_defaults()
    assert {"emission_failed", "emission"} <= {line["event"] for line in logged}
    assert all(line.get("risk_item_uid") == str(item["uid"]) for line in logged), logged


async def test_one_json_access_line_per_request_with_the_route_template():
    import falcon.asgi
    import falcon.testing

    from app.middleware import AccessLog, Observe

    stream = io.BytesIO()
    app = falcon.asgi.App(middleware=[Observe(None, AccessLog(stream))])

    class Thing:
        async def on_get(self, req, resp, thing_id):
            resp.media = {"id": thing_id}

    app.add_route("/api/gateway/v1/things/{thing_id}", Thing())
    async with falcon.testing.ASGIConductor(app) as conductor:
        resp = await conductor.simulate_get("/api/gateway/v1/things/42", headers={"X-Request-Id": "req-1"})
        await conductor.simulate_get("/nowhere")
    [first, second] = lines(stream.getvalue().decode())
    assert resp.headers["x-request-id"] == "req-1"
    assert {k: first[k] for k in ("event", "requestId", "surface", "route", "method", "status")} == {
        "event": "request", "requestId": "req-1", "surface": "gateway",
        "route": "/api/gateway/v1/things/{thing_id}", "method": "GET", "status": 200}
    assert first["ms"] >= 0 and first["timestamp"]
    assert second["route"] == "(unmatched)" and second["status"] == 404
