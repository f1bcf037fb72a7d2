"""`channels rotate`, run as an operator would, and the keys it leaves working."""
from __future__ import annotations

import orjson

from tests.conftest import unique
from tests.fixtures.channels import api
from tests.test_cli import cli


async def test_rotate_prints_a_new_key_and_the_old_one_stops_working(client, make_channel, revoke):
    channel = make_channel(branches=("v1",))
    done = cli("channels", "rotate", "--id", channel["id"])
    assert done.returncode == 0, done.stderr
    rotated = orjson.loads(done.stdout)
    assert rotated["id"] == channel["id"] and rotated["apiKey"].startswith("ik_")
    assert rotated["apiKey"] != channel["key"]

    url = api("v1", "auth/authorize")
    old = await client.simulate_get(url, headers={"x-api-key": channel["key"]})
    assert old.status_code == 401 and old.json["error"]["code"] == "INVALID_API_KEY"
    new = await client.simulate_get(url, headers={"x-api-key": rotated["apiKey"]})
    assert new.status_code == 200
    assert rotated["apiKey"] not in cli("channels", "list").stdout


def test_rotate_refuses_unknown_and_revoked_channels(make_channel, revoke):
    done = cli("channels", "rotate", "--id", "00000000-0000-4000-8000-000000000000")
    assert done.returncode == 1 and "no channel" in done.stderr
    channel = make_channel()
    revoke(channel)
    done = cli("channels", "rotate", "--id", channel["id"])
    assert done.returncode == 1 and done.stderr.strip().endswith("is revoked")
    assert cli("channels", "rotate", "--id", "nope").returncode == 2


async def test_rotate_cuts_off_the_tokens_of_the_old_key(client, make_channel, authorize):
    channel = make_channel(branches=("v1", "v2"))
    tokens = {b: await authorize(channel, b) for b in ("v1", "v2")}
    headers = {b: {"Authorization": f"Bearer {t}"} for b, t in tokens.items()}
    assert (await client.simulate_get(api("v1", "risk-items"), headers=headers["v1"])).status_code == 200
    assert cli("channels", "rotate", "--id", channel["id"]).returncode == 0
    for branch, path in (("v1", "risk-items"), ("v2", "risk-items"), ("v2", "auth/validator")):
        resp = await client.simulate_get(api(branch, path), headers=headers[branch])
        assert resp.status_code == 401 and resp.json["error"]["code"] == "INVALID_TOKEN", (branch, path, resp.text)


async def test_a_channel_sells_only_the_packages_it_is_given(client, admin, make_package):
    """`channels create --package` and `channels packages`: another partner's package is 403
    PACKAGE_NOT_ALLOWED (never a 409 that reveals its policy numbers), nothing is created."""
    mine, theirs = make_package(), make_package()
    done = cli("channels", "create", "--name", unique("Lane"), "--package", mine["uid"])
    assert done.returncode == 0, done.stderr
    channel = orjson.loads(done.stdout)
    assert channel["packages"] == [mine["uid"]]
    token = (await client.simulate_get(api("v1", "auth/authorize"), headers={"x-api-key": channel["apiKey"]})
             ).json["data"]["access_token"]
    auth = {"Authorization": f"Bearer {token}"}

    def item(package: dict, policy: str) -> dict:
        return {"package_uid": package["uid"], "policy_uid": policy, "variant": "travel", "insured_subject": {}}

    admin.execute("INSERT INTO insurance.risk_items (package_id, policy_uid, variant) VALUES (%s, 'THEIRS-1', 'travel')",
                  (theirs["id"],))
    for body in (item(theirs, "LANE-1"), item(theirs, "THEIRS-1")):
        resp = await client.simulate_post(api("v1", "risk-items"), headers=auth, json=body)
        assert resp.status_code == 403, resp.text
        assert resp.json["error"]["code"] == "PACKAGE_NOT_ALLOWED"
        assert resp.json["error"]["details"] == [{"field": "package_uid", "message": "not a package of this channel"}]
    assert (await client.simulate_post(api("v1", "risk-items"), headers=auth, json=item(mine, "LANE-2"))).status_code == 201

    changed = cli("channels", "packages", "--id", channel["id"], "--package", theirs["uid"])
    assert changed.returncode == 0, changed.stderr
    assert orjson.loads(changed.stdout)["packages"] == [theirs["uid"]]
    assert (await client.simulate_post(api("v1", "risk-items"), headers=auth, json=item(theirs, "LANE-3"))).status_code == 201
    resp = await client.simulate_post(api("v1", "risk-items"), headers=auth, json=item(mine, "LANE-4"))
    assert resp.status_code == 403 and resp.json["error"]["code"] == "PACKAGE_NOT_ALLOWED"
    assert admin.execute("SELECT count(*) AS n FROM insurance.risk_items WHERE channel_id = %s",
                         (channel["id"],)).fetchone()["n"] == 2

    unknown = cli("channels", "packages", "--id", channel["id"], "--package", "no-such-package")
    assert unknown.returncode == 1 and unknown.stderr.strip().endswith("no package with uid no-such-package")


async def test_partner_metadata_may_not_hold_system_owned_keys(client, admin, make_package):
    """metadata.integration is the emission state the dashboard shows: a partner cannot fake it."""
    package = make_package()
    channel = orjson.loads(cli("channels", "create", "--name", unique("Faker"), "--package", package["uid"]).stdout)
    token = (await client.simulate_get(api("v1", "auth/authorize"), headers={"x-api-key": channel["apiKey"]})
             ).json["data"]["access_token"]
    body = {"package_uid": package["uid"], "policy_uid": "FAKE-1", "variant": "travel", "insured_subject": {},
            "metadata": {"integration": {"status": "SUCCESS"}, "partnerRef": "x"}}
    resp = await client.simulate_post(api("v1", "risk-items"), headers={"Authorization": f"Bearer {token}"}, json=body)
    assert resp.status_code == 422, resp.text
    assert resp.json["error"]["code"] == "RESERVED_FIELD"
    assert resp.json["error"]["details"] == [{"field": "metadata.integration", "message": "is owned by the system"}]
    assert admin.execute("SELECT count(*) AS n FROM insurance.risk_items WHERE channel_id = %s",
                         (channel["id"],)).fetchone()["n"] == 0


def test_create_with_an_unknown_package_creates_nothing(admin):
    name = unique("lane")
    done = cli("channels", "create", "--name", name, "--package", "no-such-package")
    assert done.returncode == 1 and done.stderr.strip().endswith("no package with uid no-such-package")
    assert admin.execute("SELECT count(*) AS n FROM insurance.channels WHERE name = %s", (name,)).fetchone()["n"] == 0


def test_channel_names_are_unique_and_list_shows_packages_and_branches_change(admin, make_package):
    """Issue 21: duplicate names were accepted, `channels list` omitted packages, and the
    command line could not change a channel's branches."""
    package = make_package()
    name = unique("Acme")
    made = cli("channels", "create", "--name", name, "--package", package["uid"])
    assert made.returncode == 0, made.stderr
    channel = orjson.loads(made.stdout)
    for again in (name, name.upper(), f" {name}"):
        twice = cli("channels", "create", "--name", again)
        assert twice.returncode == 1 and "exists already" in twice.stderr, (again, twice.stderr)
    listed = {c["id"]: c for c in orjson.loads(cli("channels", "list").stdout)}
    assert listed[channel["id"]]["packages"] == [package["uid"]]

    changed = cli("channels", "branches", "--id", channel["id"], "--branch", "v2", "--branch", "ia/v1")
    assert changed.returncode == 0, changed.stderr
    assert orjson.loads(changed.stdout)["branches"] == ["v2", "ia/v1"]
    row = admin.execute("SELECT branches FROM insurance.channels WHERE id = %s", (channel["id"],)).fetchone()
    assert row["branches"] == ["v2", "ia/v1"]
    audit = admin.execute("SELECT targets, result, details FROM insurance.audit_log WHERE action = 'channels.set_branches' "
                          "ORDER BY id DESC LIMIT 1").fetchone()
    assert audit["result"] == "ok" and channel["id"] in str(audit["targets"])
    assert cli("channels", "branches", "--id", channel["id"]).returncode == 2, "at least one branch"
    assert cli("channels", "branches", "--id", channel["id"], "--branch", "v9").returncode == 2
    missing = cli("channels", "branches", "--id", "00000000-0000-4000-8000-000000000000", "--branch", "v1")
    assert missing.returncode == 1 and "no channel" in missing.stderr


async def test_a_branch_taken_away_stops_its_tokens(client, make_channel, authorize):
    channel = make_channel(branches=("v1", "v2"))
    token = await authorize(channel, "v2")
    assert cli("channels", "branches", "--id", channel["id"], "--branch", "v1").returncode == 0
    resp = await client.simulate_get(api("v2", "risk-items"), headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 401
