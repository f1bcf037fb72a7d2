"""`channels rotate`, run as an operator would, and the keys it leaves working."""
from __future__ import annotations

import orjson

from tests.gateway.conftest import api
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
