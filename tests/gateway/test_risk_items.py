"""Gateway risk items through HTTP: create, read, windows, v2 pages, isolation, validation."""
from __future__ import annotations

import pytest

from tests.conftest import unique
from tests.fixtures.channels import api, bearer


@pytest.fixture
async def channel_token(make_channel, authorize):
    """(channel, {"v1": token, "v2": token}) of a fresh channel."""
    channel = make_channel(branches=("v1", "v2"))
    return channel, {b: await authorize(channel, b) for b in ("v1", "v2")}


def item_body(package: dict, **override) -> dict:
    return {"package_uid": package["uid"], "policy_uid": unique("POL"), "variant": "travel",
            "insured_subject": {"name": "Grace Hopper", "phone": "+34600000001"},
            "beneficiaries": [{"name": "Grace Hopper", "email": "Grace@Example.com", "isHolder": True, "share": 60},
                              {"name": "Ada", "relationship": "child", "share": 40}],
            **override}


async def create(client, token: str, body, branch: str = "v1"):
    return await client.simulate_post(api(branch, "risk-items"), headers=bearer(token), json=body)


def count_items(admin, channel: dict) -> int:
    return admin.execute("SELECT count(*) AS n FROM insurance.risk_items WHERE channel_id = %s",
                         (channel["id"],)).fetchone()["n"]


@pytest.mark.parametrize("branch", ["v1", "v2"])
async def test_create_then_read(client, admin, make_package, channel_token, sell, branch):
    channel, tokens = channel_token
    package = make_package(variants=("travel", "home"))
    sell(channel, package)
    body = item_body(package)
    resp = await create(client, tokens[branch], body, branch)
    assert resp.status_code == 201, resp.text
    item = resp.json["data"]
    assert item["package_uid"] == package["uid"] and item["policy_uid"] == body["policy_uid"]
    assert item["variant"] == "travel" and item["status"] == "active"
    assert item["insured_subject"] == body["insured_subject"]
    assert [(b["name"], b["email"], b["isHolder"], b["share"]) for b in item["beneficiaries"]] == [
        ("Grace Hopper", "grace@example.com", True, 60), ("Ada", None, False, 40)]
    row = admin.execute("SELECT id, channel_id FROM insurance.risk_items WHERE uid = %s", (item["uid"],)).fetchone()
    assert str(row["channel_id"]) == channel["id"]
    assert item["id"] == row["id"], "the answer carries the item's id beside its uid"

    resp = await client.simulate_get(api(branch, f"risk-items/{item['uid']}"), headers=bearer(tokens[branch]))
    assert resp.status_code == 200 and resp.json["data"] == item


async def test_a_channel_never_reaches_another_channels_items(client, admin, make_package, make_channel, authorize,
                                                              sell):
    package = make_package()
    a, b = make_channel(branches=("v1",)), make_channel(branches=("v1",))
    sell(a, package)
    sell(b, package)
    token_a, token_b = await authorize(a), await authorize(b)
    body = item_body(package)
    created = (await create(client, token_a, body)).json["data"]

    listed = (await client.simulate_get(api("v1", "risk-items"), headers=bearer(token_b))).json["data"]
    assert listed["items"] == [] and listed["total"] == 0
    by_policy = await client.simulate_get(api("v1", "risk-items"), headers=bearer(token_b),
                                          params={"policyId": body["policy_uid"]})
    assert by_policy.json["data"]["total"] == 0
    resp = await client.simulate_get(api("v1", f"risk-items/{created['uid']}"), headers=bearer(token_b))
    assert resp.status_code == 404 and resp.json["error"]["code"] == "RISK_ITEM_NOT_FOUND"

    # B cannot create into A's channel: the body has no channel field, the token decides.
    resp = await create(client, token_b, {**item_body(package), "channel_id": a["id"]})
    assert resp.status_code == 400
    assert {"field": "channel_id", "message": "unknown field"} in resp.json["error"]["details"]
    made = (await create(client, token_b, item_body(package))).json["data"]
    assert count_items(admin, a) == 1 and count_items(admin, b) == 1
    resp = await client.simulate_get(api("v1", f"risk-items/{made['uid']}"), headers=bearer(token_a))
    assert resp.status_code == 404

    mine = (await client.simulate_get(api("v1", "risk-items"), headers=bearer(token_a))).json["data"]
    assert [i["uid"] for i in mine["items"]] == [created["uid"]] and mine["total"] == 1


@pytest.fixture
def channel_with_items(admin, make_package, make_channel):
    """A channel holding 120 risk items (policy uids P-000 .. P-119, in creation order)."""
    channel = make_channel(branches=("v1", "v2"))
    package = make_package()
    admin.execute(
        """INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant)
           SELECT %s, %s, 'P-' || lpad(n::text, 3, '0'), 'travel' FROM generate_series(0, 119) AS n""",
        (package["id"], channel["id"]))
    return channel


async def test_window_defaults_and_limits(client, authorize, channel_with_items):
    token = await authorize(channel_with_items)

    async def window(**params):
        resp = await client.simulate_get(api("v1", "risk-items"), headers=bearer(token),
                                         params={k: str(v) for k, v in params.items()})
        return resp

    data = (await window()).json["data"]
    assert (data["from"], data["to"], data["total"], len(data["items"])) == (0, 49, 120, 50)
    assert data["items"][0]["policy_uid"] == "P-000" and data["items"][-1]["policy_uid"] == "P-049"
    data = (await window(**{"from": 10})).json["data"]
    assert (data["to"], data["items"][0]["policy_uid"], len(data["items"])) == (59, "P-010", 50)
    data = (await window(**{"from": 5, "to": 5})).json["data"]
    assert [i["policy_uid"] for i in data["items"]] == ["P-005"]
    data = (await window(**{"from": 0, "to": 99})).json["data"]
    assert len(data["items"]) == 100, "exactly 100 items is allowed"
    data = (await window(**{"from": 100, "to": 199})).json["data"]
    assert len(data["items"]) == 20 and data["total"] == 120
    data = (await window(**{"from": 500})).json["data"]
    assert data["items"] == [] and data["total"] == 120
    data = (await window(policyId="P-042")).json["data"]
    assert [i["policy_uid"] for i in data["items"]] == ["P-042"] and data["total"] == 1

    for bad in ({"from": 0, "to": 100}, {"from": 10, "to": 9}, {"from": -1}, {"from": 60, "to": 10}):
        resp = await window(**bad)
        assert resp.status_code == 400, bad
        assert resp.json["error"]["code"] == "INVALID_WINDOW", bad
    for bad, field in (({"from": "x"}, "from"), ({"to": "1.5"}, "to")):  # not an integer: the core's code
        resp = await window(**bad)
        assert resp.status_code == 400, bad
        assert resp.json["error"]["code"] == "VALIDATION_ERROR" and resp.json["error"]["details"][0]["field"] == field
    resp = await window(policyId="x" * 101)
    assert resp.status_code == 400 and resp.json["error"]["code"] == "VALIDATION_ERROR"


async def test_v2_keyset_pages(client, authorize, channel_with_items):
    token = await authorize(channel_with_items, "v2")
    seen, cursor, pages = [], None, 0
    while True:
        params = {"limit": "50", **({"cursor": cursor} if cursor else {})}
        resp = await client.simulate_get(api("v2", "risk-items"), headers=bearer(token), params=params)
        assert resp.status_code == 200, resp.text
        data = resp.json["data"]
        assert data["total"] == 120
        seen += [i["policy_uid"] for i in data["items"]]
        pages += 1
        cursor = data["nextCursor"]
        if cursor is None:
            break
    assert pages == 3 and seen == [f"P-{n:03d}" for n in range(120)]

    # v2 keeps v1's window too
    resp = await client.simulate_get(api("v2", "risk-items"), headers=bearer(token), params={"from": "118"})
    assert [i["policy_uid"] for i in resp.json["data"]["items"]] == ["P-118", "P-119"]

    for params, code in (({"limit": "0"}, "INVALID_PAGINATION"), ({"limit": "101"}, "INVALID_PAGINATION"),
                         ({"limit": "ten"}, "VALIDATION_ERROR"), ({"limit": "5", "from": "0"}, "INVALID_PAGINATION"),
                         ({"cursor": "!!"}, "INVALID_CURSOR"), ({"cursor": "AAAA"}, "INVALID_CURSOR")):
        resp = await client.simulate_get(api("v2", "risk-items"), headers=bearer(token), params=params)
        assert resp.status_code == 400, params
        assert resp.json["error"]["code"] == code, params


VALIDATION_CASES = [
    ({"package_uid": None}, "package_uid"),
    ({"package_uid": 12}, "package_uid"),
    ({"policy_uid": ""}, "policy_uid"),
    ({"policy_uid": "x" * 101}, "policy_uid"),
    ({"variant": ["travel"]}, "variant"),
    ({"insured_subject": "Grace"}, "insured_subject"),
    ({"metadata": []}, "metadata"),
    ({"beneficiaries": {"name": "x"}}, "beneficiaries"),
    ({"beneficiaries": ["x"]}, "beneficiaries[0]"),
    ({"beneficiaries": [{"email": "a@b.co"}]}, "beneficiaries[0].name"),
    ({"beneficiaries": [{"name": "A", "email": "not-an-email"}]}, "beneficiaries[0].email"),
    ({"beneficiaries": [{"name": "A", "isHolder": True}]}, "beneficiaries[0].email"),
    ({"beneficiaries": [{"name": "A", "isHolder": "yes"}]}, "beneficiaries[0].isHolder"),
    ({"beneficiaries": [{"name": "A", "share": 101}]}, "beneficiaries[0].share"),
    ({"beneficiaries": [{"name": "A", "share": True}]}, "beneficiaries[0].share"),
    ({"beneficiaries": [{"name": "A", "is_holder": True}]}, "beneficiaries[0].is_holder"),
    ({"status": "cancelled"}, "status"),
]


@pytest.mark.parametrize("override,field", VALIDATION_CASES)
async def test_invalid_bodies_are_400_with_the_field(client, admin, make_package, channel_token, sell, override,
                                                     field):
    channel, tokens = channel_token
    package = make_package()
    sell(channel, package)  # a package of another lane is refused first (403 PACKAGE_NOT_ALLOWED)
    body = {k: v for k, v in {**item_body(package), **override}.items() if v is not None}
    resp = await create(client, tokens["v1"], body)
    assert resp.status_code == 400, resp.text
    assert resp.json["error"]["code"] == "VALIDATION_ERROR"
    assert field in [d["field"] for d in resp.json["error"]["details"]]
    assert count_items(admin, channel) == 0


async def test_missing_fields_are_each_reported(client, channel_token):
    _, tokens = channel_token
    resp = await create(client, tokens["v1"], {})
    assert resp.status_code == 400
    assert {d["field"] for d in resp.json["error"]["details"]} == {
        "package_uid", "policy_uid", "variant", "insured_subject"}


async def test_malformed_bodies(client, admin, channel_token):
    channel, tokens = channel_token
    url, auth = api("v1", "risk-items"), bearer(tokens["v1"])
    cases = [
        ({"Content-Type": "application/json"}, b"{not json", 400, "MALFORMED_JSON"),
        ({"Content-Type": "application/json"}, b"", 400, "MALFORMED_JSON"),
        ({"Content-Type": "application/json"}, b"[1, 2]", 400, "VALIDATION_ERROR"),
        ({"Content-Type": "text/plain"}, b"{}", 415, "UNSUPPORTED_MEDIA_TYPE"),
    ]
    for headers, body, status, code in cases:
        resp = await client.simulate_post(url, headers={**auth, **headers}, body=body)
        assert resp.status_code == status, (body, resp.text)
        assert resp.json["error"]["code"] == code
    assert count_items(admin, channel) == 0


async def test_unknown_package_unsold_variant_and_duplicate(client, admin, make_package, channel_token,
                                                             make_channel, authorize, sell):
    channel, tokens = channel_token
    package = make_package(variants=("travel", "home"))
    sell(channel, package)

    resp = await create(client, tokens["v1"], item_body(package, package_uid=unique("nope")))
    assert resp.status_code == 422 and resp.json["error"]["code"] == "UNKNOWN_PACKAGE"
    resp = await create(client, tokens["v1"], item_body(package, variant="health"))
    assert resp.status_code == 422
    assert resp.json["error"] == {"code": "INVALID_VARIANT", "message": "the package does not sell this variant",
                                  "details": {"variants": ["home", "travel"]}}
    resp = await create(client, tokens["v1"], item_body(package, variant="boat"))
    assert resp.status_code == 422 and resp.json["error"]["code"] == "INVALID_VARIANT"
    assert count_items(admin, channel) == 0

    body = item_body(package)
    assert (await create(client, tokens["v1"], body)).status_code == 201
    resp = await create(client, tokens["v2"], {**body, "variant": "home"}, "v2")
    assert resp.status_code == 409 and resp.json["error"]["code"] == "DUPLICATE_POLICY"
    other = make_channel(branches=("v1",))
    sell(other, package)  # two partners selling one package share its policy numbers
    resp = await create(client, await authorize(other), body)
    assert resp.status_code == 409 and resp.json["error"]["code"] == "DUPLICATE_POLICY"
    assert count_items(admin, channel) == 1 and count_items(admin, other) == 0
    # the same policy uid in another package is another policy
    another = make_package()
    sell(channel, another)
    assert (await create(client, tokens["v1"], {**body, "package_uid": another["uid"]})).status_code == 201


async def test_unknown_item_uid_is_404(client, channel_token):
    _, tokens = channel_token
    for uid in ("not-a-uuid", "00000000-0000-4000-8000-000000000000"):
        resp = await client.simulate_get(api("v1", f"risk-items/{uid}"), headers=bearer(tokens["v1"]))
        assert resp.status_code == 404 and resp.json["error"]["code"] == "RISK_ITEM_NOT_FOUND"


async def test_risk_items_exist_only_on_v1_and_v2(client, make_channel, authorize):
    channel = make_channel()
    for branch in ("ia/v1", "integrations/v2"):
        resp = await client.simulate_get(api(branch, "risk-items"), headers=bearer(await authorize(channel, branch)))
        assert resp.status_code == 404


async def test_more_than_50_beneficiaries_is_the_same_422_as_for_holders(client, admin, make_package, channel_token,
                                                                         sell):
    channel, tokens = channel_token
    package = make_package(variants=("travel",))
    sell(channel, package)
    many = [{"name": f"B{i}"} for i in range(51)]
    resp = await create(client, tokens["v1"], item_body(package, beneficiaries=many))
    assert resp.status_code == 422, resp.text
    assert resp.json["error"]["code"] == "BENEFICIARY_LIMIT"
    assert count_items(admin, channel) == 0, "nothing created"
    resp = await create(client, tokens["v1"], item_body(package, beneficiaries=many[:50]))
    assert resp.status_code == 201, resp.text


@pytest.mark.parametrize("branch", ["v1", "v2"])
async def test_an_item_is_read_by_the_integer_id_its_create_answer_returned(client, make_package, channel_token,
                                                                            sell, make_channel, authorize, branch):
    """Issue 21: GET /risk-items/{id} answered 404 for the `id` the create answer carries."""
    channel, tokens = channel_token
    package = make_package()
    sell(channel, package)
    made = (await create(client, tokens[branch], item_body(package), branch)).json["data"]
    by_id = await client.simulate_get(api(branch, f"risk-items/{made['id']}"), headers=bearer(tokens[branch]))
    assert by_id.status_code == 200, by_id.text
    assert by_id.json["data"] == made
    other = make_channel(branches=(branch,))
    foreign = await client.simulate_get(api(branch, f"risk-items/{made['id']}"),
                                        headers=bearer(await authorize(other, branch)))
    assert foreign.status_code == 404 and foreign.json["error"]["code"] == "RISK_ITEM_NOT_FOUND"
    for ref in ("0", str(2**63), "²", "12abc"):
        resp = await client.simulate_get(api(branch, f"risk-items/{ref}"), headers=bearer(tokens[branch]))
        assert resp.status_code in (400, 404) and resp.status_code < 500, (ref, resp.text)
