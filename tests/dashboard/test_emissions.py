"""Router integrationEmissions: what the dashboard reads and the checks on what it asks."""
from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import pytest

from tests.conftest import unique


async def query(client, session, procedure: str, value=None):
    qs = "" if value is None else f"input={quote(json.dumps(value), safe='')}"
    return await client.simulate_get(f"/api/trpc/integrationEmissions.{procedure}", query_string=qs,
                                     headers=session["headers"])


async def mutate(client, session, procedure: str, value):
    return await client.simulate_post(f"/api/trpc/integrationEmissions.{procedure}", json=value,
                                      headers=session["headers"])


async def test_by_risk_item_shows_status_attempts_next_retry_and_last_error(client, session, make_risk_item,
                                                                           make_emission):
    item = make_risk_item()
    errors = [{"code": "PROVIDER_TIMEOUT", "message": "read timeout"},
              {"code": "PROVIDER_UNAVAILABLE", "message": "503", "httpStatus": 503}]
    failed = make_emission(item["id"], attempts=2, errors=errors)
    make_emission(item["id"], provider="MAIL_PROVIDER", status="SUCCESS", external_id="MAIL-9")
    resp = await query(client, session, "byRiskItem", {"riskItemId": item["id"]})
    assert resp.status_code == 200
    data = resp.json["result"]["data"]
    assert data["riskItem"]["policyUid"] == item["policy_uid"]
    first, second = data["emissions"]
    assert first["id"] == failed["id"]
    assert (first["status"], first["attempts"], first["lastError"]) == ("FAILED", 2, errors[-1])
    assert datetime.fromisoformat(first["nextRetryAt"]) == failed["next_retry_at"]
    assert (second["status"], second["externalId"], second["lastError"], second["nextRetryAt"]) == \
        ("SUCCESS", "MAIL-9", None, None)


async def test_an_item_without_emissions_has_an_empty_list(client, session, make_risk_item):
    item = make_risk_item()
    resp = await query(client, session, "byRiskItem", {"riskItemId": item["id"]})
    assert resp.json["result"]["data"]["emissions"] == []


async def test_list_filters_by_status_provider_and_time(client, session, make_risk_item, make_emission, admin):
    provider = f"P_{unique('x').upper().replace('-', '_')}"
    item = make_risk_item()
    failed = make_emission(item["id"], provider=provider, event="A")
    abandoned = make_emission(item["id"], provider=provider, event="B", status="ABANDONED")
    success = make_emission(item["id"], provider=provider, event="C", status="SUCCESS")
    with admin.transaction():  # past the updated_at trigger: this one last changed two days ago
        admin.execute("SET LOCAL session_replication_role = replica")
        admin.execute("UPDATE insurance.integration_emissions SET updated_at = now() - interval '2 days' WHERE id = %s",
                      (success["id"],))

    async def ids(**filters):
        resp = await query(client, session, "list", {"provider": provider, **filters})
        assert resp.status_code == 200, resp.text
        return [e["id"] for e in resp.json["result"]["data"]["items"]]

    assert await ids() == [success["id"], abandoned["id"], failed["id"]]  # newest first
    assert await ids(status="FAILED") == [failed["id"]]
    assert await ids(status=["FAILED", "ABANDONED"]) == [abandoned["id"], failed["id"]]
    day_ago = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    assert await ids(since=day_ago) == [abandoned["id"], failed["id"]]
    assert await ids(until=day_ago) == [success["id"]]


async def test_list_pages_with_a_keyset_cursor(client, session, make_risk_item, make_emission):
    provider = f"P_{unique('x').upper().replace('-', '_')}"
    item = make_risk_item()
    made = [make_emission(item["id"], provider=provider, event=f"E{i}")["id"] for i in range(5)]
    seen, cursor = [], None
    for _ in range(3):
        resp = await query(client, session, "list", {"provider": provider, "limit": 2,
                                                     **({"cursor": cursor} if cursor else {})})
        page = resp.json["result"]["data"]
        seen.append([e["id"] for e in page["items"]])
        cursor = page["nextCursor"]
    assert seen == [made[4:2:-1], made[2:0:-1], made[:1]]
    assert cursor is None


@pytest.mark.parametrize("value,field", [
    ({"status": "DONE"}, "status"),
    ({"provider": "lower"}, "provider"),
    ({"limit": 0}, "limit"),
    ({"limit": 101}, "limit"),
    ({"cursor": "abc"}, "cursor"),
    ({"since": "yesterday"}, "since"),
    ({"since": "2026-01-01T00:00:00"}, "since"),  # no time zone
    ({"page": 2}, "page"),
])
async def test_list_rejects_bad_filters(client, session, value, field):
    resp = await query(client, session, "list", value)
    assert resp.status_code == 400
    assert resp.json["error"]["data"]["code"] == "BAD_REQUEST"
    assert field in {str(i["path"][0]) for i in resp.json["error"]["data"]["issues"]}


@pytest.mark.parametrize("value", [{}, {"emissionIds": []}, {"emissionIds": [0]}, {"emissionIds": ["1"]},
                                   {"emissionIds": list(range(1, 102))}, {"emissionIds": 1}])
async def test_retry_emissions_validates_its_input(client, session, value):
    resp = await mutate(client, session, "retryEmissions", value)
    assert resp.status_code == 400
    assert resp.json["error"]["code"] == -32600


async def test_sync_beneficiaries_of_an_unknown_item_is_not_found(client, session):
    resp = await mutate(client, session, "syncBeneficiaries", {"riskItemId": 999_999_999_999})
    assert resp.status_code == 404
    assert resp.json["error"]["message"] == "risk item not found"


async def test_sync_beneficiaries_without_a_post_sales_provider_is_skipped(client, session, make_risk_item, admin):
    item = make_risk_item()
    resp = await mutate(client, session, "syncBeneficiaries", {"riskItemId": item["id"]})
    assert resp.status_code == 200
    assert resp.json["result"]["data"] == {"riskItemId": item["id"], "riskItemUid": str(item["uid"]),
                                           "provider": None, "event": "BENEFICIARIES_SYNC", "status": "skipped",
                                           "emissionId": None, "externalId": None, "attempts": None,
                                           "nextRetryAt": None, "error": None}
    assert admin.execute("SELECT count(*) AS n FROM insurance.integration_emissions WHERE risk_item_id = %s",
                         (item["id"],)).fetchone()["n"] == 0


async def test_retry_emissions_writes_an_audit_row_with_the_session_user(client, session, make_risk_item,
                                                                          make_emission, admin):
    item = make_risk_item()
    abandoned = make_emission(item["id"], status="ABANDONED")
    resp = await mutate(client, session, "retryEmissions", {"emissionIds": [abandoned["id"]]})
    assert resp.status_code == 200, resp.text
    assert resp.json["result"]["data"] == [{"id": abandoned["id"], "status": "FAILED", "queued": True}]
    row = admin.execute("SELECT * FROM insurance.audit_log WHERE action = 'emissions.retry' AND targets = %s",
                        (json.dumps([abandoned["id"]]),)).fetchone()
    assert row["actor"] == f"dashboard:{session['email']}" and row["result"] == "ok"
    assert row["details"]["via"] == "trpc"


async def test_list_filters_by_event(client, session, make_risk_item, make_emission):
    item = make_risk_item()
    make_emission(item["id"], event="POLICY_CREATED")
    wanted = make_emission(item["id"], event="SALES_DISPATCH")
    resp = await query(client, session, "list", {"event": "SALES_DISPATCH", "limit": 100})
    ids = [e["id"] for e in resp.json["result"]["data"]["items"]]
    assert wanted["id"] in ids and all(e["event"] == "SALES_DISPATCH" for e in resp.json["result"]["data"]["items"])


async def test_sync_beneficiaries_takes_the_uid_and_is_audited_as_the_session(client, session, make_risk_item,
                                                                               admin):
    item = make_risk_item()
    resp = await mutate(client, session, "syncBeneficiaries", {"riskItemUid": str(item["uid"])})
    assert resp.status_code == 200 and resp.json["result"]["data"]["riskItemId"] == item["id"]
    audit = admin.execute("SELECT actor, targets, result FROM insurance.audit_log WHERE action = 'emissions.sync' "
                          "ORDER BY id DESC LIMIT 1").fetchone()
    assert audit == {"actor": f"dashboard:{session['email']}", "targets": [str(item["uid"])], "result": "ok"}


async def test_by_risk_item_takes_the_uid_as_well_as_the_id(client, session, make_risk_item, make_emission):
    item, other = make_risk_item(), make_risk_item()
    make_emission(item["id"])
    by_uid = await query(client, session, "byRiskItem", {"riskItemUid": str(item["uid"])})
    assert by_uid.status_code == 200
    data = by_uid.json["result"]["data"]
    assert (data["riskItem"]["id"], data["riskItem"]["uid"]) == (item["id"], str(item["uid"]))
    assert len(data["emissions"]) == 1
    both = await query(client, session, "byRiskItem", {"riskItemId": item["id"], "riskItemUid": str(other["uid"])})
    assert both.status_code == 404, "an id and a uid of two items name nothing"
    for value in ({}, {"riskItemUid": "not-a-uuid"}):
        assert (await query(client, session, "byRiskItem", value)).status_code == 400


async def test_every_emission_row_carries_the_risk_item_uid_and_policy_number(client, session, make_risk_item,
                                                                               make_emission):
    """Issue 21: tRPC rows carried riskItemId only; a dashboard showing a policy needs its uid
    and number without another call."""
    item = make_risk_item(policy_uid=unique("POL"))
    emission = make_emission(item["id"], provider=unique("PROV").upper().replace("-", "_"))
    listed = await query(client, session, "list", {"provider": emission["provider"]})
    by_item = await query(client, session, "byRiskItem", {"riskItemId": item["id"]})
    for row in (listed.json["result"]["data"]["items"][0], by_item.json["result"]["data"]["emissions"][0]):
        assert row["id"] == emission["id"]
        assert (row["riskItemId"], row["riskItemUid"], row["policyUid"]) == (item["id"], str(item["uid"]),
                                                                            item["policy_uid"])
