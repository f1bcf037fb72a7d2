"""Bad input is a 4xx, never a 5xx (app/validation.py, app/errors.py): the 500s that issue 11
reproduced, the body caps, and credentials checked before a body is read."""
from __future__ import annotations

import json
import random
import re
from typing import Any

import asyncpg
import httpx
import orjson
import pytest

from app import errors
from app.validation import ANONYMOUS_BODY_BYTES, MAX_JSON_DEPTH, nests_deeper
from tests.conftest import unique
from tests.credentials import holder_bearer, login_body, make_channel, make_dashboard_user, service_bearer

PS = "/api/postsales/v1"


def problem(resp, status: int = 400, code: str = "VALIDATION_ERROR") -> dict:
    """The one problem of an envelope error answer, checked for status and code."""
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    error = resp.json["error"]
    assert resp.json["success"] is False and error["code"] == code, resp.text
    return error["details"][0] if isinstance(error.get("details"), list) else error


async def gateway_token(client, admin, branch: str = "v1") -> dict[str, str]:
    channel = make_channel(admin)
    resp = await client.simulate_get(f"/api/gateway/{branch}/auth/authorize", headers={"x-api-key": channel["key"]})
    return {"Authorization": f"Bearer {resp.json['data']['access_token']}"}


# ---------------------------------------------------------------- the reproduced 500s

async def test_nul_in_the_otp_email_is_400_naming_the_field(client):
    resp = await client.simulate_post(f"{PS}/auth/otp/request", json={"email": "a\u0000@b.co"})
    assert problem(resp)["field"] == "email"


async def test_nul_in_a_gateway_insured_subject_is_400_naming_the_field(client, admin, make_package):
    package = make_package()
    body = {"package_uid": package["uid"], "policy_uid": unique("P"), "variant": "travel",
            "insured_subject": {"name": "x\u0000y"}}
    resp = await client.simulate_post("/api/gateway/v1/risk-items", json=body,
                                      headers=await gateway_token(client, admin))
    assert problem(resp)["field"] == "insured_subject.name"
    assert admin.execute("SELECT count(*) AS n FROM insurance.risk_items WHERE policy_uid = %s",
                         (body["policy_uid"],)).fetchone()["n"] == 0


async def test_nul_in_the_policy_id_parameter_is_400(client, admin):
    resp = await client.simulate_get("/api/gateway/v1/risk-items", query_string="policyId=%00",
                                     headers=await gateway_token(client, admin))
    assert problem(resp)["field"] == "policyId"


async def test_a_path_id_of_non_ascii_digits_is_400_after_the_token_check(client, services):
    resp = await client.simulate_get(f"{PS}/risk-items/%C2%B2")
    problem(resp, 400, "MISSING_BEARER_TOKEN")  # the token first, whatever the id
    resp = await client.simulate_get(f"{PS}/risk-items/%C2%B2", headers=holder_bearer(services, "h@example.com"))
    assert problem(resp)["field"] == "riskItemId"


async def test_a_window_beyond_bigint_is_400_in_the_envelope(client, admin):
    resp = await client.simulate_get("/api/gateway/v1/risk-items", query_string="from=0&to=99999999999999999999",
                                     headers=await gateway_token(client, admin))
    assert problem(resp)["field"] == "to"


async def test_a_trpc_cursor_beyond_bigint_is_bad_request(client, admin):
    user = make_dashboard_user(admin)
    login = await client.simulate_post("/api/auth/login", body=login_body(user),
                                       headers={"Content-Type": "application/json"})
    cookie = {"Cookie": f"dashboard_session={login.cookies['dashboard_session'].value}"}
    for cursor, status in (("9223372036854775807", 200), ("9999999999999999999", 400)):
        resp = await client.simulate_get("/api/trpc/integrationEmissions.list", headers=cookie,
                                         params={"input": orjson.dumps({"cursor": cursor}).decode()})
        assert resp.status_code == status, resp.text
    assert resp.json["error"]["data"]["code"] == "BAD_REQUEST"


async def test_a_dispatch_batch_item_with_an_object_path_is_refused_alone(client, services):
    resp = await client.simulate_post("/api/integrations/dispatch-batch", headers=service_bearer(services),
                                      json={"requests": [{"id": None, "path": {}, "body": {}}]})
    assert resp.status_code == 200, resp.text
    [result] = resp.json["data"]["results"]
    assert result["id"] is None and result["status"] == 400 and result["error"]["code"] == "VALIDATION_ERROR"


# ---------------------------------------------------------------- the core reader

@pytest.mark.parametrize("raw,field", [
    (b'{"email": "a@b.co", "x": "\\ud800"}', "x"),                      # an unpaired surrogate
    (b'{"email": "a@b.co", "n": [1, {"m": 9223372036854775808}]}', "n[1].m"),  # beyond bigint
    (b'{"email": "a@b.co", "n": -99999999999999999999999}', "n"),
])
async def test_json_that_postgres_or_asyncpg_would_refuse_is_400_naming_the_field(client, raw, field):
    resp = await client.simulate_post(f"{PS}/auth/otp/request", body=raw, headers={"Content-Type": "application/json"})
    assert problem(resp)["field"] == field


async def test_one_code_per_failure_on_every_surface(client, admin, services):
    surfaces = [
        (f"{PS}/auth/otp/request", {}),
        (f"{PS}/risk-items/1", holder_bearer(services, "h@example.com")),
        ("/api/gateway/v1/risk-items", await gateway_token(client, admin)),
        ("/api/integrations/dispatch", service_bearer(services)),
        ("/api/auth/login", {}),
    ]
    for path, auth in surfaces:
        send = client.simulate_patch if "risk-items/1" in path else client.simulate_post
        json_type = {**auth, "Content-Type": "application/json"}
        problem(await send(path, body=b"{", headers=json_type), 400, "MALFORMED_JSON")
        problem(await send(path, body=b"[1]", headers=json_type), 400, "VALIDATION_ERROR")
        problem(await send(path, body=b"{}", headers={**auth, "Content-Type": "text/plain"}),
                415, "UNSUPPORTED_MEDIA_TYPE")


async def test_anonymous_bodies_are_capped_at_16_kib_before_parsing(client):
    big = b'{"email": "' + b"a" * ANONYMOUS_BODY_BYTES + b'@b.co"}'
    for path in (f"{PS}/auth/otp/request", f"{PS}/auth/otp/verify", "/api/auth/login"):
        resp = await client.simulate_post(path, body=big, headers={"Content-Type": "application/json"})
        problem(resp, 413, "PAYLOAD_TOO_LARGE")


async def test_authenticated_bodies_are_capped_by_max_body_bytes_after_the_token(config, services):
    import dataclasses

    import falcon.testing

    from app.app import build_services, create_app
    small = dataclasses.replace(config, max_body_bytes=4096)
    app = create_app(small, build_services(small))
    body = b'{"insured_subject": {"address": "' + b"x" * 5000 + b'"}}'
    async with falcon.testing.ASGIConductor(app) as conductor:
        resp = await conductor.simulate_patch(f"{PS}/risk-items/1", body=body,
                                              headers={"Content-Type": "application/json"})
        problem(resp, 400, "MISSING_BEARER_TOKEN")  # no token: refused before the body is read
        resp = await conductor.simulate_patch(f"{PS}/risk-items/1", body=body, headers={
            "Content-Type": "application/json", **holder_bearer(services, "h@example.com")})
        assert problem(resp, 413, "PAYLOAD_TOO_LARGE")["details"] == {"limit": 4096}


def test_a_chunked_body_is_cut_off_while_streaming(live_api):
    sent = 0

    def chunks():
        nonlocal sent
        for _ in range(200):  # 200 x 8 KiB would be 1.6 MB; the server stops reading at 16 KiB
            sent += 8192
            yield b" " * 8192

    resp = httpx.post(f"{live_api}{PS}/auth/otp/request", content=chunks(), timeout=10,
                      headers={"Content-Type": "application/json"})
    assert "content-length" not in resp.request.headers  # chunked: no length to refuse up front
    assert resp.status_code == 413 and resp.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"


# ---------------------------------------------------------------- the last line: SQLSTATE class 22

async def test_a_data_exception_from_postgres_is_400_not_500(client, services):
    for value in ("nul\u0000inside", 2**63):  # 22021 from the server, 22000 from asyncpg itself
        with pytest.raises(asyncpg.PostgresError) as caught:
            await services.db.pool.fetchval("SELECT $1::text" if isinstance(value, str) else "SELECT $1::bigint",
                                            value)
        api_error = errors.from_database(caught.value)
        assert api_error is not None and api_error.status_code == 400 and api_error.code == "VALIDATION_ERROR"


def test_details_json_cannot_carry_never_break_the_envelope():
    body = orjson.loads(errors.envelope("X", "m", {"n": 10**30}))
    assert body == {"success": False, "error": {"code": "X", "message": "m"}}


async def test_trpc_reads_a_post_body_only_for_a_live_session(client, admin):
    body = orjson.dumps({"emissionIds": [1], "pad": "x" * ANONYMOUS_BODY_BYTES})
    path, json_type = "/api/trpc/integrationEmissions.retryEmissions", {"Content-Type": "application/json"}
    resp = await client.simulate_post(path, body=body, headers=json_type)
    assert resp.status_code == 401 and resp.json["error"]["data"]["code"] == "UNAUTHORIZED"  # never read
    user = make_dashboard_user(admin)
    login = await client.simulate_post("/api/auth/login", body=login_body(user), headers=json_type)
    cookie = {"Cookie": f"dashboard_session={login.cookies['dashboard_session'].value}", **json_type}
    resp = await client.simulate_post(path, body=body, headers=cookie)
    assert resp.status_code == 400 and resp.json["error"]["data"]["code"] == "BAD_REQUEST"  # read, then refused


async def test_a_backoffice_form_with_a_non_ascii_csrf_token_is_refused_not_a_500(client, admin):
    user = make_dashboard_user(admin)  # found by the fuzz run: compare_digest refuses non-ASCII str
    login = await client.simulate_post("/api/auth/login", body=login_body(user),
                                       headers={"Content-Type": "application/json"})
    resp = await client.simulate_post("/backoffice/emissions/retry", body="csrf=%C3%8D&id=1", headers={
        "Cookie": f"dashboard_session={login.cookies['dashboard_session'].value}",
        "Content-Type": "application/x-www-form-urlencoded"})
    problem(resp, 403, "CSRF_TOKEN_INVALID")
    resp = await client.simulate_post("/backoffice/emissions/retry", body="csrf=x%00&id=1", headers={
        "Cookie": f"dashboard_session={login.cookies['dashboard_session'].value}",
        "Content-Type": "application/x-www-form-urlencoded"})
    assert problem(resp)["field"] == "csrf"


# ---------------------------------------------------------------- nesting (issue 31)

def nested(depth: int) -> bytes:
    """A JSON object `depth` levels deep: {"a": {"a": ... {} ...}}."""
    return b'{"a":' * (depth - 1) + b"{}" + b"}" * (depth - 1)


async def json_routes(client, admin, services) -> list[tuple[str, str, dict[str, str]]]:
    """(method, path, credentials) of every operation of the served document that takes a JSON
    body, path parameters filled in, each with a real credential of its security scheme."""
    user = make_dashboard_user(admin)
    login = await client.simulate_post("/api/auth/login", body=login_body(user),
                                       headers={"Content-Type": "application/json"})
    schemes = {"dashboardSession": {"Cookie": f"dashboard_session={login.cookies['dashboard_session'].value}"},
               "serviceRole": service_bearer(services),
               "postsalesBearer": holder_bearer(services, "deep@example.com")}
    document = (await client.simulate_get("/openapi.json")).json
    routes = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in ("post", "put", "patch", "delete"):
                continue
            body = operation.get("requestBody", {})
            if "$ref" in body:
                body = document["components"]["requestBodies"][body["$ref"].rsplit("/", 1)[1]]
            if "application/json" not in body.get("content", {}):
                continue
            [scheme] = [name for requirement in operation["security"] for name in requirement] or [None]
            if scheme is not None and scheme not in schemes:  # a gateway branch's bearer
                branch = path.split("/")[3]
                schemes[scheme] = await gateway_token(client, admin, branch)
            concrete = path.replace("{path}", "integrationEmissions.retryEmissions")
            routes.append((method.upper(), re.sub(r"\{[^}]+\}", "1", concrete), schemes.get(scheme, {})))
    return routes


async def test_a_body_nested_254_levels_deep_is_400_on_every_json_route(client, admin, services):
    routes = await json_routes(client, admin, services)
    assert len(routes) >= 14 and any("/trpc/" in path for _, path, _ in routes)
    policy = unique("P")  # orjson.dumps stopped at 255 levels: a gateway create was stored, then a 500
    deep = b'{"policy_uid": "' + policy.encode() + b'", "insured_subject": ' + nested(253) + b"}"
    for method, path, credential in routes:
        resp = await client.simulate_request(method, path, body=deep,
                                             headers={**credential, "Content-Type": "application/json"})
        assert resp.status_code == 400, f"{method} {path}: {resp.status_code} {resp.text[:300]}"
        if "/trpc/" in path:  # tRPC's own envelope
            [item] = resp.json if isinstance(resp.json, list) else [resp.json]
            assert item["error"]["data"]["code"] == "BAD_REQUEST", resp.text
            assert f"deeper than {MAX_JSON_DEPTH} levels" in item["error"]["message"], resp.text
        else:
            assert problem(resp) == {"field": "", "message": f"nests deeper than {MAX_JSON_DEPTH} levels "
                                                              "of objects and arrays"}, f"{method} {path}"
    assert admin.execute("SELECT count(*) AS n FROM insurance.risk_items WHERE policy_uid = %s",
                         (policy,)).fetchone()["n"] == 0


async def test_the_nesting_limit_is_checked_on_the_query_input_of_trpc_too(client, admin):
    user = make_dashboard_user(admin)
    login = await client.simulate_post("/api/auth/login", body=login_body(user),
                                       headers={"Content-Type": "application/json"})
    resp = await client.simulate_get("/api/trpc/integrationEmissions.list",
                                     headers={"Cookie": f"dashboard_session={login.cookies['dashboard_session'].value}"},
                                     params={"input": nested(MAX_JSON_DEPTH + 1).decode()})
    assert resp.status_code == 400 and resp.json["error"]["data"]["code"] == "BAD_REQUEST", resp.text
    assert f"deeper than {MAX_JSON_DEPTH} levels" in resp.json["error"]["message"], resp.text


async def test_a_body_at_the_nesting_limit_is_read(client):
    at_limit = b'{"email": "deep@example.com", "x": ' + nested(MAX_JSON_DEPTH - 1) + b"}"
    resp = await client.simulate_post(f"{PS}/auth/otp/request", body=at_limit,
                                      headers={"Content-Type": "application/json"})
    assert resp.status_code != 400 or problem(resp)["field"] != "", resp.text  # not refused for its depth
    over = b'{"email": "deep@example.com", "x": ' + nested(MAX_JSON_DEPTH) + b"}"
    resp = await client.simulate_post(f"{PS}/auth/otp/request", body=over, headers={"Content-Type": "application/json"})
    assert problem(resp)["field"] == ""


def random_json(rng: random.Random, depth: int = 0) -> Any:
    """A value whose strings hold brackets, quotes and backslashes (what the depth scan must skip)."""
    if depth > 8 or rng.random() < 0.3:
        return rng.choice(['a"[{', "\\[", "x", 1, None, '\\"]]}', "\\\\", ""])
    if rng.random() < 0.5:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["[", "k", '"{', "\\"]) + str(i): random_json(rng, depth + 1) for i in range(rng.randint(0, 3))}


def depth_of(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    return 0


def test_the_raw_depth_scan_agrees_with_a_parser():
    rng = random.Random(31)
    for _ in range(2000):
        value = random_json(rng)
        depth = depth_of(value)
        for raw in (orjson.dumps(value), json.dumps(value, indent=1).encode()):
            for limit in {0, 1, 2, max(depth - 1, 0), depth, depth + 1}:
                assert nests_deeper(raw, limit) == (depth > limit), (raw, limit)
    assert not nests_deeper(b'"' + b"[" * 100 + b'"', 1)
    assert nests_deeper(b"[" * 65 + b"]" * 65) and not nests_deeper(b"[" * 64 + b"]" * 64)
    assert nests_deeper(b"[[]" * 64 + b"]" * 64) and not nests_deeper(b"[[]" * 63 + b"]" * 63)  # a leaf in each level
