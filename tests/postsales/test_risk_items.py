"""A holder's risk items through HTTP: list, read, patch, beneficiaries, variants, and the
claimant check (another holder's item is 401 "access denied")."""
from __future__ import annotations

from tests.postsales.conftest import PREFIX, code_of


async def login(ps_client, mailbox, address: str) -> dict[str, str]:
    """The whole OTP login, as the holder web app does it."""
    assert (await ps_client.simulate_post(f"{PREFIX}/auth/otp/request", json={"email": address})).status_code == 200
    code = code_of(await mailbox.wait_for(address))
    resp = await ps_client.simulate_post(f"{PREFIX}/auth/otp/verify", json={"email": address, "otp": code})
    assert resp.status_code == 200, resp.text
    return {"Authorization": f"Bearer {resp.json['data']['access_token']}"}


async def test_holder_journey(ps_client, mailbox, make_package, make_risk_item, holder_email):
    package = make_package(variants=("travel", "home"))
    item = make_risk_item(package=package, holder_email=holder_email,
                          insured_subject={"name": "Ada Lovelace", "phone": "+34 600 000 000"})
    other = make_risk_item(holder_email="someone-else-" + holder_email)
    auth = await login(ps_client, mailbox, holder_email)
    base = f"{PREFIX}/risk-items/{item['id']}"

    listed = await ps_client.simulate_get(f"{PREFIX}/me/risk-items", headers=auth)
    assert listed.status_code == 200
    assert [i["id"] for i in listed.json["data"]] == [item["id"]]
    assert listed.json["data"][0]["package"] == {"uid": package["uid"], "name": package["name"]}

    detail = (await ps_client.simulate_get(base, headers=auth)).json["data"]
    assert detail["policy_uid"] == item["policy_uid"] and detail["status"] == "active"
    [holder] = detail["beneficiaries"]
    assert holder["email"] == holder_email and holder["isHolder"] is True and "is_holder" not in holder

    patched = await ps_client.simulate_patch(base, headers=auth, json={"insured_subject": {
        "phone": "+34 611 111 111", "address": {"line1": "1 Main St", "city": "Madrid"}}})
    assert patched.status_code == 200, patched.text
    assert patched.json["data"]["insured_subject"] == {
        "name": "Ada Lovelace", "phone": "+34 611 111 111", "address": {"line1": "1 Main St", "city": "Madrid"}}

    for body, code in [({"insured_subject": {"name": "Eve"}}, "FIELD_NOT_EDITABLE"),
                       ({"status": "cancelled"}, "FIELD_NOT_EDITABLE"),
                       ({"insured_subject": {"phone": "+34 622", "name": "Eve"}}, "FIELD_NOT_EDITABLE"),
                       ({"insured_subject": {"email": "not-an-email"}}, "INVALID_VALUE")]:
        refused = await ps_client.simulate_patch(base, headers=auth, json=body)
        assert refused.status_code == 422 and refused.json["error"]["code"] == code, (body, refused.text)
        problems = refused.json["error"]["details"]  # one shape for every field problem (issue 29)
        assert isinstance(problems, list) and problems, refused.text
        assert all(set(p) == {"field", "message"} and p["message"] for p in problems), refused.text
    unchanged = (await ps_client.simulate_get(base, headers=auth)).json["data"]
    assert unchanged["insured_subject"]["phone"] == "+34 611 111 111" and unchanged["status"] == "active"

    # Beneficiaries: make room in the holder's share, add one, change it, remove it.
    beneficiaries = f"{base}/beneficiaries"
    resp = await ps_client.simulate_patch(f"{beneficiaries}/{holder['id']}", headers=auth, json={"share": 60})
    assert resp.status_code == 200 and resp.json["data"]["share"] == 60
    added = await ps_client.simulate_post(beneficiaries, headers=auth,
                                          json={"name": "Kid", "email": "Kid@Example.com", "share": 40})
    assert added.status_code == 201, added.text
    kid = added.json["data"]
    assert kid["email"] == "kid@example.com" and kid["isHolder"] is False
    over = await ps_client.simulate_post(beneficiaries, headers=auth, json={"name": "Too much", "share": 1})
    assert over.status_code == 422 and over.json["error"]["code"] == "SHARES_EXCEED_100"
    made_holder = await ps_client.simulate_post(beneficiaries, headers=auth, json={"name": "X", "is_holder": True})
    assert made_holder.status_code == 422 and made_holder.json["error"]["code"] == "FIELD_NOT_EDITABLE"
    changed = await ps_client.simulate_patch(f"{beneficiaries}/{kid['id']}", headers=auth,
                                             json={"relationship": "child", "share": 30})
    assert changed.status_code == 200 and changed.json["data"]["relationship"] == "child"
    no_holder_removal = await ps_client.simulate_delete(f"{beneficiaries}/{holder['id']}", headers=auth)
    assert no_holder_removal.status_code == 422
    assert no_holder_removal.json["error"]["code"] == "HOLDER_NOT_REMOVABLE"
    removed = await ps_client.simulate_delete(f"{beneficiaries}/{kid['id']}", headers=auth)
    assert removed.status_code == 200
    listing = await ps_client.simulate_get(beneficiaries, headers=auth)
    assert [b["id"] for b in listing.json["data"]] == [holder["id"]]

    variants = await ps_client.simulate_get(f"{base}/variants", headers=auth)
    assert variants.status_code == 200
    assert [(v["code"], v["currency"]) for v in variants.json["data"]] == [("home", "EUR"), ("travel", "EUR")]
    assert variants.json["data"][0]["premium"] == 19.9 and variants.json["data"][0]["coverages"]

    # Another holder's item: 401 access denied on every route, nothing changed.
    for method, path, body in [("GET", f"{PREFIX}/risk-items/{other['id']}", None),
                               ("PATCH", f"{PREFIX}/risk-items/{other['id']}", {"insured_subject": {"phone": "+1 555"}}),
                               ("GET", f"{PREFIX}/risk-items/{other['id']}/beneficiaries", None),
                               ("POST", f"{PREFIX}/risk-items/{other['id']}/beneficiaries", {"name": "Mallory"}),
                               ("GET", f"{PREFIX}/risk-items/{other['id']}/variants", None),
                               ("GET", f"{PREFIX}/risk-items/999999999999", None)]:
        resp = await ps_client.simulate_request(method, path, headers=auth, json=body)
        assert resp.status_code == 401, (method, path, resp.text)
        assert resp.json["error"] == {"code": "ACCESS_DENIED", "message": "access denied"}


async def test_removing_the_holder_removes_access(ps_client, admin, make_risk_item, holder_email, bearer):
    item = make_risk_item(holder_email=holder_email)
    path = f"{PREFIX}/risk-items/{item['id']}"
    assert (await ps_client.simulate_get(path, headers=bearer(holder_email))).status_code == 200
    admin.execute("UPDATE insurance.beneficiaries SET email = %s WHERE risk_item_id = %s AND is_holder",
                  ("new-" + holder_email, item["id"]))
    assert (await ps_client.simulate_get(path, headers=bearer(holder_email))).status_code == 401
    assert (await ps_client.simulate_get(path, headers=bearer("new-" + holder_email))).status_code == 200


async def test_bad_ids_and_bodies_are_400(ps_client, make_risk_item, holder_email, bearer):
    item = make_risk_item(holder_email=holder_email)
    auth = bearer(holder_email)
    for path in (f"{PREFIX}/risk-items/abc", f"{PREFIX}/risk-items/0", f"{PREFIX}/risk-items/{item['uid']}x", f"{PREFIX}/risk-items/99999999999999999999",
                 f"{PREFIX}/risk-items/{item['id']}/beneficiaries/x"):
        method = "PATCH" if path.endswith("/x") else "GET"
        resp = await ps_client.simulate_request(method, path, headers=auth, json={"name": "n"})
        assert resp.status_code == 400 and resp.json["error"]["code"] == "VALIDATION_ERROR", path
    resp = await ps_client.simulate_patch(f"{PREFIX}/risk-items/{item['id']}", headers=auth, json=["x"])
    assert resp.status_code == 400


async def test_each_route_answers_only_its_methods(ps_client, make_risk_item, holder_email, bearer):
    item = make_risk_item(holder_email=holder_email)
    expected = {
        f"{PREFIX}/me/risk-items": ("DELETE", {"GET", "OPTIONS"}),
        f"{PREFIX}/risk-items/{item['id']}": ("DELETE", {"GET", "PATCH", "OPTIONS"}),
        f"{PREFIX}/risk-items/{item['id']}/beneficiaries": ("PUT", {"GET", "POST", "OPTIONS"}),
        f"{PREFIX}/risk-items/{item['id']}/beneficiaries/1": ("GET", {"PATCH", "DELETE", "OPTIONS"}),
        f"{PREFIX}/risk-items/{item['id']}/variants": ("POST", {"GET", "OPTIONS"}),
    }
    for path, (method, allowed) in expected.items():
        resp = await ps_client.simulate_request(method, path, headers=bearer(holder_email))
        assert resp.status_code == 405, path
        assert resp.json["error"]["code"] == "METHOD_NOT_ALLOWED"
        assert set(resp.headers["allow"].replace(" ", "").split(",")) == allowed, path


async def test_the_list_shows_active_items_only(ps_client, admin, make_risk_item, holder_email, bearer):
    active = make_risk_item(holder_email=holder_email)
    ended = [make_risk_item(holder_email=holder_email) for _ in range(2)]
    admin.execute("UPDATE insurance.risk_items SET status = 'cancelled' WHERE id = %s", (ended[0]["id"],))
    admin.execute("UPDATE insurance.risk_items SET status = 'expired' WHERE id = %s", (ended[1]["id"],))
    listed = await ps_client.simulate_get(f"{PREFIX}/me/risk-items", headers=bearer(holder_email))
    assert [(i["id"], i["uid"]) for i in listed.json["data"]] == [(active["id"], str(active["uid"]))]
    still = await ps_client.simulate_get(f"{PREFIX}/risk-items/{ended[0]['id']}", headers=bearer(holder_email))
    assert still.status_code == 200 and still.json["data"]["status"] == "cancelled"


async def test_every_item_route_takes_the_uid_as_well_as_the_id(ps_client, make_risk_item, holder_email, bearer):
    item = make_risk_item(holder_email=holder_email)
    other = make_risk_item(holder_email="another-" + holder_email)
    auth = bearer(holder_email)
    base = f"{PREFIX}/risk-items/{item['uid']}"
    detail = await ps_client.simulate_get(base, headers=auth)
    assert detail.status_code == 200 and (detail.json["data"]["id"], detail.json["data"]["uid"]) == (
        item["id"], str(item["uid"]))
    patched = await ps_client.simulate_patch(base, headers=auth, json={"insured_subject": {"phone": "+34 622"}})
    assert patched.status_code == 200 and patched.json["data"]["insured_subject"]["phone"] == "+34 622"
    [holder] = (await ps_client.simulate_get(f"{base}/beneficiaries", headers=auth)).json["data"]
    changed = await ps_client.simulate_patch(f"{base}/beneficiaries/{holder['id']}", headers=auth, json={"share": 50})
    assert changed.status_code == 200
    added = await ps_client.simulate_post(f"{base}/beneficiaries", headers=auth, json={"name": "Kid", "share": 10})
    assert added.status_code == 201
    removed = await ps_client.simulate_delete(f"{base}/beneficiaries/{added.json['data']['id']}", headers=auth)
    assert removed.status_code == 200
    assert (await ps_client.simulate_get(f"{base}/variants", headers=auth)).status_code == 200
    denied = await ps_client.simulate_get(f"{PREFIX}/risk-items/{other['uid']}", headers=auth)
    assert denied.status_code == 401 and denied.json["error"]["code"] == "ACCESS_DENIED"


async def test_a_holder_adds_at_most_50_beneficiaries_as_the_gateway_does(ps_client, bearer, make_risk_item,
                                                                           holder_email, admin):
    """Issue 19: holders could add beneficiaries without limit (the gateway capped at 50)."""
    item = make_risk_item(holder_email=holder_email)
    url = f"{PREFIX}/risk-items/{item['id']}/beneficiaries"
    auth = bearer(holder_email)
    for i in range(49):  # the holder is the first of the item's 50
        resp = await ps_client.simulate_post(url, headers=auth, json={"name": f"B{i}"})
        assert resp.status_code == 201, resp.text
    refused = await ps_client.simulate_post(url, headers=auth, json={"name": "B51"})
    assert refused.status_code == 422, refused.text
    assert refused.json["error"]["code"] == "BENEFICIARY_LIMIT"
    assert admin.execute("SELECT count(*) AS n FROM insurance.beneficiaries WHERE risk_item_id = %s",
                         (item["id"],)).fetchone()["n"] == 50
