"""Who looked (issue 39): what shows a person's data writes one audit row of that view, in the
call that shows it: tRPC byRiskItem (via trpc), the back-office's risk item and emission pages
(via backoffice). A call that shows nothing writes nothing."""
from __future__ import annotations

from tests.conftest import unique
from tests.dashboard.test_emissions import query


def views(admin, item_id: int) -> list[tuple]:
    return [(r["action"], r["via"], r["actor"], r["targets"]) for r in admin.execute(
        "SELECT action, via, actor, targets FROM insurance.audit_log WHERE action LIKE 'people.view%%' "
        "AND targets @> %s::jsonb ORDER BY id", (f'[{{"riskItemId": {item_id}}}]',))]


async def test_trpc_by_risk_item_audits_who_saw_the_items_people(client, session, make_risk_item, make_emission,
                                                                 admin):
    holder = f"{unique('ada')}@example.com"
    item = make_risk_item(holder_email=holder)
    make_emission(item["id"])
    resp = await query(client, session, "byRiskItem", {"riskItemId": item["id"]})
    assert resp.status_code == 200, resp.text
    assert holder in {b["email"] for b in resp.json["result"]["data"]["riskItem"]["beneficiaries"]}
    assert views(admin, item["id"]) == [
        ("people.viewRiskItem", "trpc", f"dashboard:{session['email']}", [holder, {"riskItemId": item["id"]}])]


async def test_an_item_not_found_over_trpc_writes_no_view(client, session, admin):
    before = admin.execute("SELECT max(id) AS id FROM insurance.audit_log").fetchone()["id"] or 0
    resp = await query(client, session, "byRiskItem", {"riskItemId": 2_000_000_000})
    assert resp.status_code == 404, resp.text
    assert admin.execute("SELECT count(*) AS n FROM insurance.audit_log WHERE id > %s AND action LIKE 'people.view%%'",
                         (before,)).fetchone()["n"] == 0


async def test_the_back_office_item_and_emission_pages_audit_their_views(client, session, make_risk_item,
                                                                        make_emission, admin):
    holder = f"{unique('ada')}@example.com"
    item = make_risk_item(holder_email=holder)
    emission = make_emission(item["id"])
    for path in (f"/backoffice/risk-items/{item['id']}", f"/backoffice/emissions/{emission['id']}"):
        resp = await client.simulate_get(path, headers=session["headers"])
        assert resp.status_code == 200, (path, resp.text[:300])
    seen = [(holder, {"riskItemId": item["id"]})] * 2
    assert views(admin, item["id"]) == [
        (action, "backoffice", f"dashboard:{session['email']}", list(targets))
        for action, targets in zip(("people.viewRiskItem", "people.viewEmission"), seen)]


async def test_a_polled_item_writes_one_view_a_minute_per_session(client, session, services, make_risk_item, admin,
                                                                  monkeypatch):
    item = make_risk_item(holder_email=f"{unique('ada')}@example.com")
    now = [1000.0]
    monkeypatch.setattr(services.recent_views, "clock", lambda: now[0])
    for _ in range(3):
        resp = await query(client, session, "byRiskItem", {"riskItemId": item["id"]})
        assert resp.status_code == 200, resp.text
    assert len(views(admin, item["id"])) == 1, "three polls within the minute: one row"
    now[0] += 61
    assert (await query(client, session, "byRiskItem", {"riskItemId": item["id"]})).status_code == 200
    assert len(views(admin, item["id"])) == 2, "a minute later: the view is written again"
