"""Gateway tokens through HTTP: authorize, the 6 x 6 branch matrix, refusals, the context."""
from __future__ import annotations

import base64
import time

import falcon.testing
import jwt
import orjson
import pytest

from app.app import create_app
from app.config import Config
from app.gateway import BRANCHES
from tests.conftest import TEST_SECRETS, child_environ
from tests.fixtures.channels import api, bearer

# Every protected route of every branch: the validator, and the risk items of v1 and v2.
PROTECTED = [(b, "auth/validator") for b in BRANCHES] + [
    (b, p) for b in ("v1", "v2") for p in ("risk-items", "risk-items/00000000-0000-4000-8000-000000000000")]

INVALID = {"code": "INVALID_TOKEN", "message": "Invalid access token"}


def seed_error(resp) -> dict:
    """The seed's code and message; a token of another branch adds a hint in `details`."""
    return {k: resp.json["error"][k] for k in ("code", "message")}
EXPIRED = {"code": "TOKEN_EXPIRED", "message": "Access token expired"}
MISSING = {"code": "MISSING_BEARER_TOKEN", "message": "Missing bearer token"}


def sign(claims: dict, secret_name: str, **headers) -> str:
    return jwt.encode(claims, TEST_SECRETS[secret_name], algorithm="HS256", headers=headers or None)


def claims_for(channel: dict, branch: str = "v1", **override) -> dict:
    now = int(time.time())
    return {"iss": "insurance-backend-gateway", "aud": f"gateway/{branch}", "sub": channel["id"],
            "iat": now, "exp": now + 600, "branch": branch,
            "channel": {"id": channel["id"], "name": channel["name"]}, **override}


@pytest.mark.parametrize("branch", BRANCHES)
async def test_authorize_issues_a_token_of_the_branch(client, make_channel, branch):
    channel = make_channel()
    resp = await client.simulate_get(api(branch, "auth/authorize"), headers={"x-api-key": channel["key"]})
    assert resp.status_code == 200, resp.text
    assert resp.json["success"] is True
    data = resp.json["data"]
    assert data["token_type"] == "Bearer" and data["expires_in"] == 3600
    claims = jwt.decode(data["access_token"], TEST_SECRETS[BRANCHES[branch]], algorithms=["HS256"],
                        audience=f"gateway/{branch}")
    assert claims["sub"] == channel["id"]
    assert claims["exp"] - claims["iat"] == 3600


async def test_authorize_refusals(client, make_channel, revoke):
    url = api("v1", "auth/authorize")
    resp = await client.simulate_get(url)
    assert resp.status_code == 400 and resp.json["error"]["code"] == "MISSING_API_KEY"
    resp = await client.simulate_get(url, headers={"x-api-key": "ik_not-a-key"})
    assert resp.status_code == 401 and resp.json["error"]["code"] == "INVALID_API_KEY"

    only_v1 = make_channel(branches=("v1",))
    resp = await client.simulate_get(api("ia/v1", "auth/authorize"), headers={"x-api-key": only_v1["key"]})
    assert resp.status_code == 403
    assert resp.json["error"] == {"code": "BRANCH_NOT_ALLOWED", "message": "channel may not use this branch",
                                  "details": {"branch": "ia/v1"}}

    revoked = make_channel()
    revoke(revoked)
    resp = await client.simulate_get(url, headers={"x-api-key": revoked["key"]})
    assert resp.status_code == 403 and resp.json["error"]["code"] == "CHANNEL_REVOKED"
    assert revoked["key"] not in resp.text


async def test_six_by_six_a_token_works_only_on_its_own_branch(client, make_channel, authorize):
    channel = make_channel()
    tokens = {branch: await authorize(channel, branch) for branch in BRANCHES}
    seen = {}
    for token_branch, token in tokens.items():
        for route_branch, path in PROTECTED:
            resp = await client.simulate_get(api(route_branch, path), headers=bearer(token))
            seen[token_branch, route_branch, path] = resp.status_code
            if token_branch == route_branch:
                expected = 404 if path.startswith("risk-items/") else 200
                assert resp.status_code == expected, (token_branch, route_branch, path, resp.text)
            else:
                assert resp.status_code == 401, (token_branch, route_branch, path, resp.text)
                assert seed_error(resp) == INVALID
                assert resp.json["error"]["details"]["belongsTo"] == f"gateway/{token_branch}"
    # 6 token branches x 10 protected routes over the 6 branches, 10 of them accepted
    assert len(seen) == 60
    assert sum(1 for s in seen.values() if s != 401) == 10


async def test_equal_secrets_still_do_not_cross_branches(make_channel):
    """aud names the branch: a v1 token fails on v2 even when both secrets were set equal."""
    env = child_environ(AUTH_SECRET_V2=TEST_SECRETS["AUTH_SECRET"])
    channel = make_channel()
    async with falcon.testing.ASGIConductor(create_app(Config.from_env(env))) as conductor:
        token = (await conductor.simulate_get(api("v1", "auth/authorize"),
                                              headers={"x-api-key": channel["key"]})).json["data"]["access_token"]
        assert (await conductor.simulate_get(api("v1", "auth/validator"), headers=bearer(token))).status_code == 200
        resp = await conductor.simulate_get(api("v2", "auth/validator"), headers=bearer(token))
    assert resp.status_code == 401 and seed_error(resp) == INVALID
    assert resp.json["error"]["details"]["belongsTo"] == "gateway/v1"


@pytest.mark.parametrize("branch,path", PROTECTED)
@pytest.mark.parametrize("authorization", [None, "", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Bearer not-a-jwt"])
async def test_missing_or_malformed_bearer_is_400(client, branch, path, authorization):
    headers = {} if authorization is None else {"Authorization": authorization}
    resp = await client.simulate_get(api(branch, path), headers=headers)
    assert resp.status_code == 400
    assert resp.json["error"] == MISSING


async def test_expired_token_is_401(client, make_channel):
    channel = make_channel()
    token = sign(claims_for(channel, iat=int(time.time()) - 7200, exp=int(time.time()) - 60), "AUTH_SECRET")
    resp = await client.simulate_get(api("v1", "risk-items"), headers=bearer(token))
    assert resp.status_code == 401 and resp.json["error"] == EXPIRED


async def test_forged_tokens_are_refused_with_the_seeds_message(client, make_channel, authorize):
    channel, other = make_channel(), make_channel()
    good = await authorize(channel, "v1")
    header, payload, signature = good.split(".")

    unsigned = jwt.encode(claims_for(channel), key=None, algorithm="none")
    claims = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["sub"] = other["id"]
    tampered = ".".join([header, base64.urlsafe_b64encode(orjson.dumps(claims)).rstrip(b"=").decode(), signature])
    postsales_signed = sign(claims_for(channel), "POSTSALES_JWT_SECRET")
    wrong_aud = sign(claims_for(channel, aud="postsales"), "AUTH_SECRET")
    no_sub = sign({k: v for k, v in claims_for(channel).items() if k != "sub"}, "AUTH_SECRET")

    for token in (unsigned, tampered, postsales_signed, wrong_aud, no_sub):
        for path in ("auth/validator", "risk-items"):
            resp = await client.simulate_get(api("v1", path), headers=bearer(token))
            assert resp.status_code == 401, (token, path, resp.text)
            assert resp.json["error"] == INVALID
    assert (await client.simulate_get(api("v1", "auth/validator"), headers=bearer(good))).status_code == 200


async def test_a_revoked_channels_token_stops_working(client, admin, make_channel, make_package, authorize,
                                                      revoke):
    channel = make_channel()
    tokens = {b: await authorize(channel, b) for b in ("v1", "ia/v1")}
    assert (await client.simulate_get(api("v1", "risk-items"), headers=bearer(tokens["v1"]))).status_code == 200
    revoke(channel)
    for branch, path in (("v1", "risk-items"), ("v1", "auth/validator"), ("ia/v1", "auth/validator")):
        resp = await client.simulate_get(api(branch, path), headers=bearer(tokens[branch]))
        assert resp.status_code == 401 and resp.json["error"] == INVALID
    body = {"package_uid": make_package()["uid"], "policy_uid": "P-REVOKED", "variant": "travel",
            "insured_subject": {}}
    resp = await client.simulate_post(api("v1", "risk-items"), headers=bearer(tokens["v1"]), json=body)
    assert resp.status_code == 401 and resp.json["error"] == INVALID
    assert admin.execute("SELECT count(*) AS n FROM insurance.risk_items WHERE channel_id = %s",
                         (channel["id"],)).fetchone()["n"] == 0


@pytest.mark.parametrize("branch", ["ia/v1", "ia/v2"])
async def test_ia_context_reaches_the_handler(client, make_channel, authorize, branch):
    channel = make_channel(ia_keys={"api_key": "sk-ai-123", "vision": "vk-9"})
    resp = await client.simulate_get(api(branch, "auth/validator"), headers=bearer(await authorize(channel, branch)))
    assert resp.status_code == 200, resp.text
    data = resp.json["data"]
    assert data["branch"] == branch
    assert data["channel"] == {"id": channel["id"], "name": channel["name"], "active": True}
    assert data["headers"] == {"x-channel-id": channel["id"], "x-ai-api-key": "sk-ai-123"}
    assert data["payload"] == {"ai_keys": {"api_key": "sk-ai-123", "vision": "vk-9"}}


@pytest.mark.parametrize("branch", ["integrations/v1", "integrations/v2"])
async def test_integrations_context_reaches_the_handler(client, make_channel, authorize, branch):
    hooks = [{"event": "POLICY_CREATED", "url": "https://partner.example/hooks"}]
    channel = make_channel(integration_payload={"webhooks": hooks, "insurer_id": "INS-42"})
    resp = await client.simulate_get(api(branch, "auth/validator"), headers=bearer(await authorize(channel, branch)))
    assert resp.status_code == 200, resp.text
    data = resp.json["data"]
    headers = data["headers"]
    assert orjson.loads(headers.pop("x-webhooks")) == hooks
    assert headers == {"x-channel-id": channel["id"], "x-insurer-id": "INS-42"}
    assert data["payload"] == {"webhooks": hooks, "insurer_id": "INS-42"}


@pytest.mark.parametrize("branch", ["v1", "v2"])
async def test_base_branches_expose_only_the_channel_id(client, make_channel, authorize, branch):
    channel = make_channel(ia_keys={"api_key": "sk-secret"}, integration_payload={"insurer_id": "X"})
    resp = await client.simulate_get(api(branch, "auth/validator"), headers=bearer(await authorize(channel, branch)))
    assert resp.json["data"]["headers"] == {"x-channel-id": channel["id"]}
    assert resp.json["data"]["payload"] == {}
    assert "sk-secret" not in resp.text


async def test_narrowing_a_channels_branches_cuts_off_the_tokens_of_the_others(client, admin, make_channel,
                                                                                authorize):
    channel = make_channel(branches=("v1", "v2"))
    v1, v2 = await authorize(channel, "v1"), await authorize(channel, "v2")
    admin.execute("UPDATE insurance.channels SET branches = '{v1}' WHERE id = %s", (channel["id"],))
    resp = await client.simulate_get(api("v2", "risk-items"), headers=bearer(v2))
    assert resp.status_code == 401 and resp.json["error"] == INVALID
    assert (await client.simulate_get(api("v1", "risk-items"), headers=bearer(v1))).status_code == 200
