"""Dashboard sessions: login, logout, the cookie, expiry, revocation, the failed-login limit."""
from __future__ import annotations

import json
import time
from urllib.parse import quote

import falcon.testing
import pytest

from app.app import create_app
from app.config import Config
from tests.conftest import child_environ, unique
from tests.dashboard.conftest import PASSWORD, login, session_row

LIST = "/api/trpc/integrationEmissions.list"
UNAUTHORIZED = {"error": {"message": "A valid dashboard session is required", "code": -32001,
                          "data": {"code": "UNAUTHORIZED", "httpStatus": 401, "path": "integrationEmissions.list"}}}


async def test_login_sets_an_httponly_lax_cookie_backed_by_a_session_row(client, make_user, admin, config):
    user = make_user()
    resp = await login(client, user["email"].upper())
    assert resp.status_code == 200, resp.text
    assert resp.json["data"]["user"] == {"id": user["id"], "email": user["email"]}
    cookie = resp.cookies["dashboard_session"]
    assert cookie.http_only and cookie.same_site == "Lax" and cookie.path == "/"
    assert cookie.max_age == config.dashboard_session_ttl == 12 * 3600
    assert not cookie.secure  # test mode on 127.0.0.1
    row = session_row(admin, cookie.value)
    assert row["user_id"] == user["id"] and row["revoked_at"] is None
    assert cookie.value.encode() not in bytes(row["token_hash"])  # only the hash is stored
    again = await client.simulate_get(LIST, headers={"Cookie": f"dashboard_session={cookie.value}"})
    assert again.status_code == 200


async def test_cookie_is_secure_outside_localhost(make_user):
    cfg = Config.from_env(child_environ(PUBLIC_BASE_URL="https://dashboard.example.com",
                                        DASHBOARD_SESSION_TTL="30m"))
    user = make_user()
    async with falcon.testing.ASGIConductor(create_app(cfg)) as conductor:
        resp = await login(conductor, user["email"])
    assert resp.status_code == 200
    assert resp.cookies["dashboard_session"].secure
    assert resp.cookies["dashboard_session"].max_age == 1800


@pytest.mark.parametrize("password", ["wrong password", PASSWORD.upper()])
async def test_wrong_password_is_401(client, make_user, password):
    user = make_user()
    resp = await login(client, user["email"], password)
    assert resp.status_code == 401
    assert resp.json["error"] == {"code": "INVALID_CREDENTIALS", "message": "invalid e-mail or password"}
    assert "dashboard_session" not in resp.cookies


async def test_unknown_and_inactive_users_get_the_same_401_for_a_wrong_password(client, make_user):
    unknown = await login(client, f"{unique('nobody')}@insurance.invalid")
    inactive = await login(client, make_user(active=False)["email"], "a wrong password")
    assert unknown.status_code == inactive.status_code == 401
    assert unknown.json["error"] == inactive.json["error"]


async def test_a_disabled_user_with_the_right_password_is_told_the_account_is_disabled(client, make_user):
    """Issue 30: a disabled operator read "invalid e-mail or password" and tried again. Only who
    knows the password learns it (after the check), and no session is opened."""
    user = make_user(active=False)
    resp = await login(client, user["email"])
    assert resp.status_code == 403, resp.text
    assert resp.json["error"] == {"code": "ACCOUNT_DISABLED",
                                  "message": "this account is disabled; ask an administrator to enable it"}
    assert "dashboard_session" not in resp.cookies


@pytest.mark.parametrize("body", [{"email": "not-an-email", "password": "x"}, {"email": "a@b.co"},
                                  {"email": "a@b.co", "password": 1}, [1], "x"])
async def test_malformed_login_is_400(client, body):
    resp = await client.simulate_post("/api/auth/login", json=body)
    assert resp.status_code == 400
    assert resp.json["error"]["code"] == "VALIDATION_ERROR"
    problems = resp.json["error"]["details"]  # [{field, message}], as on every surface
    assert problems and all(set(p) == {"field", "message"} for p in problems), resp.text


async def test_login_from_a_foreign_origin_is_403(client, make_user):
    resp = await login(client, make_user()["email"], headers={"Origin": "https://evil.example"})
    assert resp.status_code == 403


async def test_failed_logins_are_limited_per_email_and_address(client, make_user):
    user = make_user()
    for _ in range(5):
        assert (await login(client, user["email"], "nope")).status_code == 401
    limited = await login(client, user["email"])  # even the right password waits
    assert limited.status_code == 429
    assert limited.json["error"]["code"] == "RATE_LIMITED"
    assert 1 <= int(limited.headers["retry-after"]) <= 900
    # As every limit answers (issue 29): retryAfter, and X-RateLimit-* naming the (e-mail, address) limit.
    assert limited.json["error"]["details"] == {"retryAfter": int(limited.headers["retry-after"])}
    assert limited.headers.get("x-ratelimit-limit") == "5" and limited.headers["x-ratelimit-remaining"] == "0"
    assert int(limited.headers["x-ratelimit-reset"]) >= time.time()
    other = make_user()
    assert (await login(client, other["email"])).status_code == 200  # another e-mail is not locked out


async def test_failed_logins_are_limited_per_ip(client, make_user, admin):
    ip = "203.0.113.77"
    # 49 failures already counted from this address, each for another e-mail; the 50th is a real one.
    admin.execute("""INSERT INTO insurance.dashboard_login_failures (key, failures, window_ends)
                     VALUES (%s, 49, now() + interval '10 minutes')
                     ON CONFLICT (key) DO UPDATE SET failures = 49, window_ends = excluded.window_ends""",
                  (f"ip:{ip}",))
    assert (await login(client, f"{unique('guess')}@insurance.invalid", "nope", remote_addr=ip)).status_code == 401
    user = make_user()
    assert (await login(client, user["email"], remote_addr=ip)).status_code == 429
    assert (await login(client, user["email"], remote_addr="203.0.113.78")).status_code == 200


async def test_a_success_clears_the_counter_of_its_email_and_address(client, make_user, admin):
    user = make_user()
    for _ in range(4):
        await login(client, user["email"], "nope")
    assert (await login(client, user["email"])).status_code == 200
    assert admin.execute("SELECT count(*) AS n FROM insurance.dashboard_login_failures WHERE key = %s",
                         (f"email+ip:{user['email']}|127.0.0.1",)).fetchone()["n"] == 0


async def test_logout_revokes_the_session(client, session, admin):
    resp = await client.simulate_post("/api/auth/logout", headers=session["headers"])
    assert resp.status_code == 200
    assert resp.json["data"] == {"revoked": True}
    assert resp.cookies["dashboard_session"].value == ""  # cleared
    assert session_row(admin, session["token"])["revoked_at"] is not None
    after = await client.simulate_get(LIST, headers=session["headers"])
    assert after.status_code == 401
    assert after.json == UNAUTHORIZED
    again = await client.simulate_post("/api/auth/logout", headers=session["headers"])
    assert again.json["data"] == {"revoked": False}


async def test_an_expired_session_is_unauthorized(client, session, admin):
    admin.execute("""UPDATE insurance.dashboard_sessions
                        SET created_at = now() - interval '13 hours', expires_at = now() - interval '1 hour'
                      WHERE user_id = %s""", (session["id"],))
    resp = await client.simulate_get(LIST, headers=session["headers"])
    assert resp.status_code == 401
    assert resp.json == UNAUTHORIZED


async def test_a_deactivated_user_loses_the_session(client, session, admin):
    admin.execute("UPDATE insurance.dashboard_users SET active = false WHERE id = %s", (session["id"],))
    resp = await client.simulate_get(LIST, headers=session["headers"])
    assert resp.status_code == 401 and resp.json == UNAUTHORIZED


@pytest.mark.parametrize("headers", [
    {},
    {"Cookie": "dashboard_session=forged-token"},
    {"Cookie": "other=1"},
])
async def test_no_valid_cookie_is_unauthorized(client, headers):
    resp = await client.simulate_get(LIST, headers=headers)
    assert resp.status_code == 401
    assert resp.json == UNAUTHORIZED


async def test_bearer_tokens_of_other_surfaces_are_unauthorized(client, services):
    postsales = services.postsales_tokens.issue("holder@example.com", email="holder@example.com")
    gateway = services.gateway_tokens["v1"].issue("00000000-0000-0000-0000-000000000001")
    service = services.service_tokens.issue("worker")
    for token in (postsales, gateway, service):
        resp = await client.simulate_get(LIST, headers={"Authorization": f"Bearer {token}"})
        assert resp.status_code == 401
        assert resp.json == UNAUTHORIZED


async def test_every_call_of_a_batch_is_unauthorized_without_a_session(client):
    inputs = quote(json.dumps({"0": {}, "1": {"riskItemId": 1}}), safe="")
    resp = await client.simulate_get("/api/trpc/integrationEmissions.list,integrationEmissions.byRiskItem",
                                     query_string=f"batch=1&input={inputs}")
    assert resp.status_code == 401
    assert [e["error"]["data"]["code"] for e in resp.json] == ["UNAUTHORIZED", "UNAUTHORIZED"]
    assert [e["error"]["data"]["path"] for e in resp.json] == ["integrationEmissions.list",
                                                              "integrationEmissions.byRiskItem"]


async def test_mutations_from_a_foreign_origin_are_forbidden(client, session, config):
    path = "/api/trpc/integrationEmissions.syncBeneficiaries"
    resp = await client.simulate_post(path, json={"riskItemId": 2**62},
                                      headers={**session["headers"], "Origin": "https://evil.example"})
    assert resp.status_code == 403
    assert resp.json == {"error": {"message": "Mutations are refused from this origin", "code": -32003,
                                   "data": {"code": "FORBIDDEN", "httpStatus": 403,
                                            "path": "integrationEmissions.syncBeneficiaries"}}}
    own = await client.simulate_post(path, json={"riskItemId": 2**62},
                                     headers={**session["headers"], "Origin": config.public_base_url})
    assert own.status_code == 404  # past the origin check: the item does not exist


async def test_dashboard_allowed_origins_are_accepted(make_user):
    cfg = Config.from_env(child_environ(DASHBOARD_ALLOWED_ORIGINS="https://dash.example.com, https://ops.example.com"))
    async with falcon.testing.ASGIConductor(create_app(cfg)) as conductor:
        resp = await login(conductor, make_user()["email"], headers={"Origin": "https://ops.example.com"})
        assert resp.status_code == 200
        cookie = {"Cookie": f"dashboard_session={resp.cookies['dashboard_session'].value}"}
        sync = await conductor.simulate_post("/api/trpc/integrationEmissions.syncBeneficiaries",
                                             json={"riskItemId": 2**62},
                                             headers={**cookie, "Origin": "https://dash.example.com"})
    assert sync.status_code == 404


async def test_an_allowed_dashboard_origin_gets_cors_with_credentials(make_user):
    cfg = Config.from_env(child_environ(DASHBOARD_ALLOWED_ORIGINS="https://dash.example.com"))
    dash = {"Origin": "https://dash.example.com"}
    async with falcon.testing.ASGIConductor(create_app(cfg)) as conductor:
        preflight = await conductor.simulate_options(
            "/api/trpc/integrationEmissions.retryEmissions",
            headers={**dash, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"})
        assert preflight.status_code == 204
        assert preflight.headers["access-control-allow-origin"] == "https://dash.example.com"
        assert preflight.headers["access-control-allow-credentials"] == "true"
        assert "POST" in preflight.headers["access-control-allow-methods"]
        assert "content-type" in preflight.headers["access-control-allow-headers"]
        wrong = await login(conductor, make_user()["email"], "nope", headers=dash)
        assert wrong.status_code == 401  # an error answer still carries CORS, or the page cannot read it
        assert wrong.headers["access-control-allow-origin"] == "https://dash.example.com"
        listed = await conductor.simulate_get(LIST, headers=dash)
        assert listed.status_code == 401 and listed.headers["access-control-allow-origin"] == "https://dash.example.com"
        foreign = await conductor.simulate_options(LIST, headers={"Origin": "https://evil.example",
                                                                  "Access-Control-Request-Method": "GET"})
        assert "access-control-allow-origin" not in foreign.headers


async def test_without_a_session_the_body_is_not_read(client):
    """Credentials first: a malformed or oversized body of an unauthenticated mutation is answered
    UNAUTHORIZED, never with an input or size error."""
    for body in (b"{not json", b"[" * (2 * 1024 * 1024)):
        resp = await client.simulate_post("/api/trpc/integrationEmissions.retryEmissions", body=body,
                                          headers={"Content-Type": "application/json",
                                                   "Cookie": "dashboard_session=forged"})
        assert resp.status_code == 401, resp.text
        assert resp.json["error"]["data"]["code"] == "UNAUTHORIZED"


def test_the_login_limit_the_answer_names_is_the_databases(admin):
    """LOGIN_FAILURES_PER_ADDRESS (the X-RateLimit-Limit of a refused login) is the
    per-(e-mail, address) limit of dashboard._login_keys, the rule's one home."""
    from app.dashboard.auth import LOGIN_FAILURES_PER_ADDRESS
    keys = admin.execute("SELECT key, max_failures FROM dashboard._login_keys('a@b.example', '192.0.2.1')").fetchall()
    assert {k["key"].split(":")[0]: k["max_failures"] for k in keys}["email+ip"] == LOGIN_FAILURES_PER_ADDRESS
