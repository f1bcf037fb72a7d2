"""POST /api/integrations/post-sales, the holder's post-sales emission: the seed's body (a
StandardRiskItem named by its uid), the holder's access, CORS for the holder web app, and the
provider call (to the sandbox of a real stack)."""
from __future__ import annotations

import uuid

import httpx
import pytest

from tests.fixtures.pipeline import final
from tests.postsales.conftest import ALLOWED_ORIGIN

PATH = "/api/integrations/post-sales"


def standard_risk_item(item: dict, **overrides) -> dict:
    """The body the holder web app sends: a StandardRiskItem as the specification shapes it."""
    return {"uid": str(item["uid"]), "policyUid": item["policy_uid"], "variant": item["variant"],
            "insuredSubject": {"name": "Ada Lovelace"}, "beneficiaries": [], **overrides}


async def test_the_item_is_named_by_its_uid(ps_client, bearer, make_risk_item, holder_email):
    item = make_risk_item(holder_email=holder_email)  # its package has no post-sales slug
    resp = await ps_client.simulate_post(PATH, json=standard_risk_item(item), headers=bearer(holder_email))
    assert resp.status_code == 200, resp.text
    data = resp.json["data"]
    assert data["status"] == "skipped" and data["event"] == "POST_SALES"
    assert data["riskItemId"] == item["id"] and data["riskItemUid"] == str(item["uid"])


async def test_the_integer_id_is_an_alternative(ps_client, bearer, make_risk_item, holder_email):
    item = make_risk_item(holder_email=holder_email)
    resp = await ps_client.simulate_post(PATH, json={"id": item["id"]}, headers=bearer(holder_email))
    assert resp.status_code == 200 and resp.json["data"]["riskItemUid"] == str(item["uid"])


async def test_the_item_is_read_as_the_holder_never_from_the_body(ps_client, bearer, make_risk_item, holder_email):
    mine = make_risk_item(holder_email=holder_email)
    other = make_risk_item(holder_email="someone.else@example.com")
    for body in ({"uid": str(other["uid"])}, {"id": other["id"]},
                 {"uid": str(mine["uid"]), "id": other["id"]},  # both given: they must agree
                 {"uid": str(uuid.uuid4())}):
        resp = await ps_client.simulate_post(PATH, json=body, headers=bearer(holder_email))
        assert resp.status_code == 401, body
        assert resp.json["error"] == {"code": "ACCESS_DENIED", "message": "access denied"}


@pytest.mark.parametrize("body, field", [
    ({}, "uid"), ({"uid": "not-a-uuid"}, "uid"), ({"uid": 7}, "uid"), ({"id": "7"}, "id"), ({"id": 0}, "id"),
])
async def test_a_body_without_a_usable_reference_is_400(ps_client, bearer, holder_email, body, field):
    resp = await ps_client.simulate_post(PATH, json=body, headers=bearer(holder_email))
    assert resp.status_code == 400 and resp.json["error"]["code"] == "VALIDATION_ERROR"
    assert resp.json["error"]["details"][0]["field"] == field


async def test_only_the_post_sales_token_is_accepted(ps_client, ps_services, make_risk_item, holder_email):
    item = make_risk_item(holder_email=holder_email)
    resp = await ps_client.simulate_post(PATH, json={"uid": str(item["uid"])})
    assert resp.status_code == 400 and resp.json["error"]["code"] == "MISSING_BEARER_TOKEN"
    service = ps_services.service_tokens.issue("test")
    resp = await ps_client.simulate_post(PATH, json={"uid": str(item["uid"])},
                                         headers={"Authorization": f"Bearer {service}"})
    assert resp.status_code == 401 and resp.json["error"]["code"] == "INVALID_TOKEN"


async def test_cors_for_the_holder_web_app_preflight_included(ps_client, bearer, make_risk_item, holder_email):
    preflight = await ps_client.simulate_options(PATH, headers={
        "Origin": ALLOWED_ORIGIN, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    assert preflight.status_code == 200, "a preflight needs no token"
    assert preflight.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert preflight.headers["access-control-allow-headers"] == "authorization, content-type"
    assert "Origin" in preflight.headers["vary"]

    item = make_risk_item(holder_email=holder_email)
    actual = await ps_client.simulate_post(PATH, json={"uid": str(item["uid"])},
                                           headers={"Origin": ALLOWED_ORIGIN, **bearer(holder_email)})
    assert actual.status_code == 200
    assert actual.headers["access-control-allow-origin"] == ALLOWED_ORIGIN

    foreign = await ps_client.simulate_options(PATH, headers={
        "Origin": "https://evil.example.com", "Access-Control-Request-Method": "POST"})
    assert not [h for h in foreign.headers if h.lower().startswith("access-control-")]


def test_post_sales_emits_to_the_post_sales_provider(stack, services, admin, insert_items, make_package):
    [item] = insert_items(package=make_package(variants=("travel",), post_sales="PROVIDER_A"))
    admin.execute("INSERT INTO insurance.authorized_claimants (email, risk_item_id) VALUES ('poster@example.com', %s)"
                  " ON CONFLICT DO NOTHING", (item["id"],))
    token = services.postsales_tokens.issue("poster@example.com", email="poster@example.com")
    resp = httpx.post(f"{stack.api}{PATH}", json=standard_risk_item(item),
                      headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert data["status"] == "SUCCESS" and data["event"] == "POST_SALES" and data["externalId"]
    assert final(admin, item["id"], event="POST_SALES")["external_id"] == data["externalId"]
    assert [r["idempotencyKey"] for r in stack.requests("PROVIDER_A")].count(f"{item['uid']}:PROVIDER_A:POST_SALES") == 1


def test_a_failed_post_sales_emission_leaves_metadata_integration_untouched(
        stack, services, admin, insert_items, make_package):
    """metadata.integration tells the sales dispatch (the specification); the holder sees a code
    and a generic message, never the provider's own text."""
    [item] = insert_items(package=make_package(variants=("travel",), sales="PROVIDER_A", post_sales="PROVIDER_B"))
    service = {"Authorization": f"Bearer {services.service_tokens.issue('test')}"}
    sales = httpx.post(f"{stack.api}/api/integrations/dispatch", json={"record": {"id": item["id"]}}, headers=service)
    assert sales.status_code == 200 and sales.json()["data"]["status"] == "SUCCESS", sales.text
    before = admin.execute("SELECT metadata FROM insurance.risk_items WHERE id = %s", (item["id"],)).fetchone()["metadata"]
    assert before["integration"]["state"] == "SUCCESS" and before["integration"]["event"] == "SALES_DISPATCH"

    admin.execute("INSERT INTO insurance.authorized_claimants (email, risk_item_id) VALUES ('poster@example.com', %s)"
                  " ON CONFLICT DO NOTHING", (item["id"],))
    stack.fault(provider="PROVIDER_B", count=1, status=422, body='{"reason": "agent 7 <b>internal</b> detail"}')
    token = services.postsales_tokens.issue("poster@example.com", email="poster@example.com")
    resp = httpx.post(f"{stack.api}{PATH}", json=standard_risk_item(item), headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert data["status"] == "ABANDONED" and data["event"] == "POST_SALES"
    assert data["error"] == {"code": "PROVIDER_REJECTED", "message": "The insurer did not take the request."}
    after = admin.execute("SELECT metadata FROM insurance.risk_items WHERE id = %s", (item["id"],)).fetchone()["metadata"]
    assert after == before, "a post-sales emission does not overwrite metadata.integration"
    history = final(admin, item["id"], event="POST_SALES")["error_history"]
    assert "internal" in history[0]["message"], "operators keep the provider's text in error_history"
