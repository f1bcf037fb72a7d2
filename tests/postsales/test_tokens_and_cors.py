"""The seed's token rules on post-sales routes, and CORS for the holder web app only."""
from __future__ import annotations

import time

import jwt
import pytest

from tests.conftest import TEST_SECRETS
from tests.postsales.conftest import ALLOWED_ORIGIN, PREFIX

LIST = f"{PREFIX}/me/risk-items"
SECRET = TEST_SECRETS["POSTSALES_JWT_SECRET"]


def claims(address: str, **changes) -> dict:
    now = int(time.time())
    base = {"iss": "insurance-backend-postsales", "aud": "postsales", "sub": address, "email": address,
            "iat": now, "exp": now + 600, "jti": "t"}
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


@pytest.mark.parametrize("header", [None, "", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Token a.b.c",
                                    "Bearer not-a-jwt", "Bearer a.b.c d"])
async def test_missing_or_malformed_bearer_is_400(ps_client, header):
    headers = {} if header is None else {"Authorization": header}
    resp = await ps_client.simulate_get(LIST, headers=headers)
    assert resp.status_code == 400
    assert resp.json["error"] == {"code": "MISSING_BEARER_TOKEN", "message": "Missing bearer token"}


async def test_expired_token_is_401(ps_client):
    token = jwt.encode(claims("a@example.com", iat=int(time.time()) - 7200, exp=int(time.time()) - 3600),
                       SECRET, algorithm="HS256")
    resp = await ps_client.simulate_get(LIST, headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 401
    assert resp.json["error"] == {"code": "TOKEN_EXPIRED", "message": "Access token expired"}


def _none_token(email: str) -> str:
    return jwt.encode(claims(email), None, algorithm="none")


@pytest.mark.filterwarnings("ignore::jwt.warnings.InsecureKeyLengthWarning")
@pytest.mark.parametrize("forge", [
    pytest.param(lambda e: jwt.encode(claims(e), "x" * 48, algorithm="HS256"), id="wrong secret"),
    pytest.param(lambda e: jwt.encode(claims(e, aud="gateway/v1"), SECRET, algorithm="HS256"), id="wrong aud"),
    pytest.param(lambda e: jwt.encode(claims(e, iss="insurance-backend-gateway"), SECRET, algorithm="HS256"),
                 id="wrong iss"),
    pytest.param(lambda e: jwt.encode(claims(e, email=None), SECRET, algorithm="HS256"), id="no email claim"),
    pytest.param(_none_token, id="alg none"),
    pytest.param(lambda e: jwt.encode(claims(e), SECRET, algorithm="HS512"), id="HS512"),
    pytest.param(lambda e: jwt.encode(claims(e), SECRET, algorithm="HS384"), id="HS384"),
])
async def test_forged_tokens_are_401(ps_client, make_risk_item, holder_email, forge):
    make_risk_item(holder_email=holder_email)
    resp = await ps_client.simulate_get(LIST, headers={"Authorization": f"Bearer {forge(holder_email)}"})
    assert resp.status_code == 401, resp.text
    assert resp.json["error"] == {"code": "INVALID_TOKEN", "message": "Invalid access token"}


@pytest.mark.parametrize("issuer", ["v1", "integrations/v2", "service"])
async def test_tokens_of_other_surfaces_are_refused(ps_client, ps_services, make_risk_item, holder_email, issuer):
    make_risk_item(holder_email=holder_email)
    tokens = ps_services.service_tokens if issuer == "service" else ps_services.gateway_tokens[issuer]
    token = tokens.issue(holder_email, email=holder_email)
    resp = await ps_client.simulate_get(LIST, headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 401
    assert resp.json["error"]["message"] == "Invalid access token"


async def test_preflight_from_the_allowed_origin(ps_client):
    resp = await ps_client.simulate_options(f"{PREFIX}/auth/otp/request", headers={
        "Origin": ALLOWED_ORIGIN, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})
    assert resp.status_code == 200
    assert resp.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
    assert resp.headers["access-control-allow-methods"].replace(" ", "").split(",") == ["POST"]
    assert resp.headers["access-control-allow-headers"] == "content-type"
    assert "Origin" in resp.headers["vary"]

    preflight = await ps_client.simulate_options(LIST, headers={
        "Origin": ALLOWED_ORIGIN, "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "authorization"})
    assert preflight.status_code == 200, "a preflight needs no token"
    assert preflight.headers["access-control-allow-headers"] == "authorization"

    actual = await ps_client.simulate_get(LIST, headers={"Origin": ALLOWED_ORIGIN})
    assert actual.status_code == 400
    assert actual.headers["access-control-allow-origin"] == ALLOWED_ORIGIN, "errors are readable by the app"
    assert "Retry-After" in actual.headers["access-control-expose-headers"]


async def test_no_cors_for_a_foreign_origin_or_another_surface(ps_client):
    resp = await ps_client.simulate_options(f"{PREFIX}/auth/otp/request", headers={
        "Origin": "https://evil.example.com", "Access-Control-Request-Method": "POST"})
    assert not [h for h in resp.headers if h.lower().startswith("access-control-")]
    other = await ps_client.simulate_options("/healthz", headers={
        "Origin": ALLOWED_ORIGIN, "Access-Control-Request-Method": "GET"})
    assert not [h for h in other.headers if h.lower().startswith("access-control-")]
