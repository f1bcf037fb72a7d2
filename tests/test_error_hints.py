"""Errors point the way: a token of another branch says where it belongs, an API key on a
protected route points to the authorize route, an unknown route lists its prefix's routes."""
from __future__ import annotations

import jwt


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


async def test_a_token_of_another_branch_says_which_branch_it_belongs_to(client, services):
    v2 = services.gateway_tokens["v2"].issue("c-1", branch="v2", channel={"id": "c-1", "name": "n"})
    resp = await client.simulate_get("/api/gateway/v1/risk-items", headers=bearer(v2))
    assert resp.status_code == 401
    error = resp.json["error"]
    assert error["code"] == "INVALID_TOKEN" and error["message"] == "Invalid access token"
    assert error["details"]["belongsTo"] == "gateway/v2" and error["details"]["prefix"] == "/api/gateway/v2"


async def test_a_holder_token_on_the_gateway_says_it_is_a_post_sales_token(client, services):
    holder = services.postsales_tokens.issue("a@example.com", email="a@example.com")
    resp = await client.simulate_get("/api/gateway/ia/v1/auth/validator", headers=bearer(holder))
    assert resp.status_code == 401 and resp.json["error"]["details"]["prefix"] == "/api/postsales/v1"


async def test_a_forged_token_gets_no_hint(client, services):
    forged = jwt.encode({"aud": "gateway/v2", "iss": "insurance-backend-gateway", "sub": "c", "iat": 1,
                         "exp": 4_000_000_000}, "not-the-secret-of-any-branch-0123456789", algorithm="HS256")
    resp = await client.simulate_get("/api/gateway/v1/risk-items", headers=bearer(forged))
    assert resp.status_code == 401 and "details" not in resp.json["error"]


async def test_an_api_key_on_a_protected_route_points_to_authorize(client):
    resp = await client.simulate_get("/api/gateway/v2/risk-items", headers={"x-api-key": "k-123"})
    assert resp.status_code == 400
    error = resp.json["error"]
    assert error["code"] == "MISSING_BEARER_TOKEN"
    assert error["details"]["authorize"] == "/api/gateway/v2/auth/authorize"
    assert "k-123" not in resp.text


async def test_an_unknown_route_under_a_known_prefix_lists_its_routes(client):
    resp = await client.simulate_get("/api/gateway/v1/risk-item")
    assert resp.status_code == 404
    details = resp.json["error"]["details"]
    assert details["prefix"] == "/api/gateway/v1"
    assert "GET POST /api/gateway/v1/risk-items" in details["routes"]
    assert all(" /api/gateway/v1/" in route for route in details["routes"])
    resp = await client.simulate_get("/no/such/thing")
    assert resp.status_code == 404 and "details" not in resp.json["error"]
