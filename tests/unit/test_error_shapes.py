"""One error shape on every surface (issue 29, docs/api.md): walks the error table
(app/errors.py CODES) and every documented route, and checks what the app builds from each
shape a raiser may give (SQL HINTs, Python details)."""
from __future__ import annotations

import re

import pytest

from app.errors import CODES, FIELD_CODES, ApiError
from app.openapi import operations

LIMIT_HEADERS = ("Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")


@pytest.fixture(scope="module")
async def document(client) -> dict:
    resp = await client.simulate_get("/openapi.json")
    assert resp.status_code == 200
    return resp.json


def resolve(document: dict, value: dict) -> dict:
    while isinstance(value, dict) and "$ref" in value:
        node = document
        for part in value["$ref"].lstrip("#/").split("/"):
            node = node[part]
        value = node
    return value


def test_the_error_table_names_one_shape_per_kind(document):
    """Every field problem is FieldProblems ([{field, message}]); every 429 is RetryAfterDetails
    ({retryAfter}); every details schema exists and names its properties in camelCase."""
    schemas = document["components"]["schemas"]
    for code, (status, details, _) in CODES.items():
        if details is not None:
            assert details in schemas, (code, details)
            assert {"$ref": f"#/components/schemas/{details}"} in schemas["ErrorDetails"]["anyOf"], code
        if status == 429:
            assert details == "RetryAfterDetails", code
        if code == "VALIDATION_ERROR" or "FIELD" in code or code in ("INVALID_VALUE", "PACKAGE_NOT_ALLOWED"):
            assert details == "FieldProblems", code
    assert schemas["RetryAfterDetails"]["required"] == ["retryAfter"]
    problem = schemas["FieldProblems"]["items"]
    assert problem["required"] == ["field", "message"] and set(problem["properties"]) == {"field", "message"}
    for ref in schemas["ErrorDetails"]["anyOf"]:
        schema = resolve(document, ref)
        names = set(schema.get("properties", {})) | set(schema.get("items", {}).get("properties", {}))
        assert not [n for n in names if "_" in n or "-" in n], (ref, names)


def test_every_429_of_every_route_says_retry_after_and_the_limit(document):
    """Walks every operation: a 429 declares Retry-After and X-RateLimit-*, and its body is the
    envelope (whose details for a 429 code is RetryAfterDetails)."""
    missing = []
    for path, method, op in operations(document):
        response = op.get("responses", {}).get("429")
        if response is None:
            continue
        headers = resolve(document, response).get("headers", {})
        missing += [f"{method} {path}: {h}" for h in LIMIT_HEADERS if h not in headers]
    assert missing == []
    limited = [f"{m} {p}" for p, m, op in operations(document) if "429" in op.get("responses", {})]
    for route in ("post /api/postsales/v1/auth/otp/request", "post /api/postsales/v1/auth/otp/verify",
                  "post /api/auth/login"):
        assert route in limited, f"{route} can answer 429 but does not say so"


@pytest.mark.parametrize("given", [
    {"field": "uid"},                                 # a SQL HINT (postsales.begin_emission)
    {"fields": ["insured_subject.name", "status"]},   # FIELD_NOT_EDITABLE's SQL HINT
    [{"field": "email", "message": "must be an e-mail"}],
    None,                                             # a data exception: no one field
])
@pytest.mark.parametrize("code", sorted(FIELD_CODES))
def test_every_field_code_carries_field_problems_whatever_the_raiser_gave(code, given):
    details = ApiError(CODES[code][0], code, "name is required", given).details
    assert isinstance(details, list) and details
    assert all(set(d) == {"field", "message"} and isinstance(d["field"], str) and d["message"] for d in details)
    if isinstance(given, dict) and "fields" in given:
        assert [d["field"] for d in details] == given["fields"]


def test_no_surface_sends_a_snake_case_retry_after():
    from tests.conftest import ROOT
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "app").rglob("*.py")
                 if "sandbox" not in p.parts and "orchestrator" not in p.parts
                 and re.search(r"[{,]\s*[\"']retry_after[\"']\s*:", p.read_text())]
    assert offenders == []
