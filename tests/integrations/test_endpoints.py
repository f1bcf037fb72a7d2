"""The integration routes' HTTP surface: credentials, validation, skipped, stored answers.
(The holder's post-sales route is the post-sales surface's: tests/postsales/test_emission.py.)"""
from __future__ import annotations

import pytest


@pytest.fixture
def service_auth(services) -> dict[str, str]:
    return {"Authorization": f"Bearer {services.service_tokens.issue('test')}"}


def holder_auth(services, email: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {services.postsales_tokens.issue(email, email=email)}"}


@pytest.mark.parametrize("path", ["/api/integrations/dispatch", "/api/integrations/dispatch-v2",
                                  "/api/integrations/retry"])
async def test_service_routes_need_the_service_bearer(client, services, path):
    resp = await client.simulate_post(path, json={"record": {"id": 1}})
    assert resp.status_code == 400 and resp.json["error"]["code"] == "MISSING_BEARER_TOKEN"
    resp = await client.simulate_post(path, json={"record": {"id": 1}}, headers=holder_auth(services, "a@example.com"))
    assert resp.status_code == 401 and resp.json["error"] == {"code": "INVALID_TOKEN", "message": "Invalid access token"}


@pytest.mark.parametrize("path, body", [
    ("/api/integrations/dispatch", [1]),
    ("/api/integrations/dispatch", {"record": {"id": "7"}}),
    ("/api/integrations/dispatch", {"record": {}}),
    ("/api/integrations/dispatch-v2", {"order_id": 1, "emission_id": 2}),
    ("/api/integrations/dispatch-v2", {}),
    ("/api/integrations/retry", {"emissionId": -3}),
])
async def test_a_malformed_body_is_400(client, service_auth, path, body):
    resp = await client.simulate_post(path, json=body, headers=service_auth)
    assert resp.status_code == 400 and resp.json["error"]["code"] == "VALIDATION_ERROR"


@pytest.mark.parametrize("path, body, code", [
    ("/api/integrations/dispatch", {"record": {"id": 2**62}}, "RISK_ITEM_NOT_FOUND"),
    ("/api/integrations/dispatch-v2", {"order_id": 2**62}, "ORDER_NOT_FOUND"),
    ("/api/integrations/dispatch-v2", {"emission_id": 2**62}, "EMISSION_NOT_FOUND"),
    ("/api/integrations/retry", {"emissionId": 2**62}, "EMISSION_NOT_FOUND"),
])
async def test_an_unknown_id_is_404(client, service_auth, path, body, code):
    resp = await client.simulate_post(path, json=body, headers=service_auth)
    assert resp.status_code == 404 and resp.json["error"]["code"] == code


async def test_dispatch_without_a_sales_slug_is_skipped(client, service_auth, admin, make_risk_item):
    item = make_risk_item()
    resp = await client.simulate_post("/api/integrations/dispatch",
                                      json={"type": "INSERT", "table": "risk_items", "record": {"id": item["id"]}},
                                      headers=service_auth)
    assert resp.status_code == 200
    assert resp.json["data"]["status"] == "skipped" and resp.json["data"]["emissionId"] is None
    assert admin.execute("SELECT count(*) AS n FROM insurance.integration_emissions WHERE risk_item_id = %s",
                         (item["id"],)).fetchone()["n"] == 0


async def test_retry_of_an_abandoned_emission_answers_it_unchanged(client, service_auth, admin, make_risk_item):
    item = make_risk_item()
    em = admin.execute("""INSERT INTO insurance.integration_emissions (risk_item_id, provider, event, status, attempts)
                          VALUES (%s, 'PROVIDER_A', 'SALES_DISPATCH', 'ABANDONED', 8) RETURNING id""",
                       (item["id"],)).fetchone()
    resp = await client.simulate_post("/api/integrations/retry", json={"emissionId": em["id"]}, headers=service_auth)
    assert resp.status_code == 200
    assert resp.json["data"]["status"] == "ABANDONED" and resp.json["data"]["attempts"] == 8


async def test_dispatch_batch_answers_each_delivery_on_its_own(client, service_auth, make_risk_item):
    item = make_risk_item()  # its package has no sales slug: skipped
    resp = await client.simulate_post("/api/integrations/dispatch-batch", headers=service_auth, json={"requests": [
        {"id": 1, "path": "/api/integrations/dispatch", "body": {"record": {"id": item["id"]}}},
        {"id": 2, "path": "/api/integrations/dispatch", "body": {"record": {"id": 2**62}}},
        {"id": 3, "path": "/api/elsewhere", "body": {}},
        {"id": 4, "path": "/api/integrations/retry", "body": {"emissionId": "x"}},
        {"id": 5, "path": "/api/integrations/dispatch-v2", "body": {"order_id": 2**62}},
    ]})
    assert resp.status_code == 200
    results = resp.json["data"]["results"]
    assert [(r["id"], r["status"]) for r in results] == [(1, 200), (2, 404), (3, 400), (4, 400), (5, 404)]
    assert results[0]["data"]["status"] == "skipped"
    assert [r.get("error", {}).get("code") for r in results] == [
        None, "RISK_ITEM_NOT_FOUND", "VALIDATION_ERROR", "VALIDATION_ERROR", "ORDER_NOT_FOUND"]


async def test_dispatch_batch_needs_the_service_bearer_and_a_list(client, services, service_auth):
    resp = await client.simulate_post("/api/integrations/dispatch-batch", json={"requests": []})
    assert resp.status_code == 400 and resp.json["error"]["code"] == "MISSING_BEARER_TOKEN"
    resp = await client.simulate_post("/api/integrations/dispatch-batch", json={"requests": []}, headers=service_auth)
    assert resp.status_code == 400 and resp.json["error"]["code"] == "VALIDATION_ERROR"


async def test_dispatch_takes_the_record_uid_as_well_as_its_id(client, service_auth, make_risk_item):
    """Issue 21: /dispatch read only record.id; a caller holding the item's uid got a 400."""
    item = make_risk_item()
    for record in ({"uid": str(item["uid"])}, {"id": item["id"], "uid": str(item["uid"])}):
        resp = await client.simulate_post("/api/integrations/dispatch", json={"record": record}, headers=service_auth)
        assert resp.status_code == 200, resp.text
        data = resp.json["data"]
        assert (data["riskItemId"], data["riskItemUid"], data["status"]) == (item["id"], str(item["uid"]), "skipped")
    other = make_risk_item()
    both = await client.simulate_post("/api/integrations/dispatch", headers=service_auth,
                                      json={"record": {"id": item["id"], "uid": str(other["uid"])}})
    assert both.status_code == 404, "an id and a uid of two items name nothing"
    for record in ({"uid": "not-a-uuid"}, {}):
        resp = await client.simulate_post("/api/integrations/dispatch", json={"record": record}, headers=service_auth)
        assert resp.status_code == 400 and resp.json["error"]["code"] == "VALIDATION_ERROR"
    unknown = await client.simulate_post("/api/integrations/dispatch", headers=service_auth,
                                         json={"record": {"uid": "00000000-0000-4000-8000-000000000000"}})
    assert unknown.status_code == 404 and unknown.json["error"]["code"] == "RISK_ITEM_NOT_FOUND"
