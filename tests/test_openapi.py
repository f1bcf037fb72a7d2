"""The served OpenAPI documents: valid, every operation named, split by audience, and saying what
the server does (the envelope, the error codes, the headers). The clients generated from them
are tests/test_openapi_clients.py; the server's answers against them, tests/test_fuzz_api.py."""
from __future__ import annotations

import re

import pytest
import yaml
from openapi_spec_validator import validate

from app.config import Config
from app.errors import CODES
from app.gateway import document_branches
from app.openapi import AUDIENCES, HERE, OpenApi, error_table, operations
from tests.conftest import ROOT

DOCUMENTS = ["/openapi.json", *(f"/openapi/{a}.json" for a in AUDIENCES)]


@pytest.fixture(scope="module")
async def served(client) -> dict[str, dict]:
    documents = {}
    for url in DOCUMENTS:
        resp = await client.simulate_get(url)
        assert resp.status_code == 200, (url, resp.text)
        documents[url] = resp.json
    return documents


@pytest.mark.parametrize("url", DOCUMENTS)
def test_every_served_document_is_valid_openapi_3_1(served, url):
    assert served[url]["openapi"].startswith("3.1")
    validate(served[url])  # raises with the first problem


async def test_an_unknown_audience_is_404(client):
    resp = await client.simulate_get("/openapi/everyone.json")
    assert resp.status_code == 404 and resp.json["error"]["code"] == "NOT_FOUND"


def test_no_yaml_flow_mapping_was_split_by_a_comma():
    """`{description: a, b}` parses as two keys, `b` with no value: quote such descriptions."""
    def stray(value, where):
        if isinstance(value, dict):
            for key, item in value.items():
                if item is None and " " in str(key):
                    yield f"{where}: {key!r}"
                yield from stray(item, f"{where}/{key}")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                yield from stray(item, f"{where}[{i}]")
    found = [s for path in sorted(HERE.glob("*.yaml")) for s in stray(yaml.safe_load(path.read_text()), path.name)]
    assert found == []


def test_every_operation_has_a_unique_readable_id_a_tag_and_its_security(served):
    document = served["/openapi.json"]
    ids = [op.get("operationId") for _, _, op in operations(document)]
    assert None not in ids, [f"{m} {p}" for p, m, op in operations(document) if "operationId" not in op]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert all(re.fullmatch(r"[a-z][A-Za-z0-9]+", i) for i in ids), ids
    assert {"authorizeV1", "authorizeIaV2", "listRiskItemsV2", "createRiskItemV1", "getRiskItemV2"} <= set(ids)
    for path, method, op in operations(document):
        assert op.get("tags"), f"{method} {path} has no tag"
        assert "security" in op, f"{method} {path} declares no security (say [] when it is public)"


def test_each_gateway_branch_has_its_own_bearer_scheme(served):
    document = served["/openapi/partner.json"]
    schemes = document["components"]["securitySchemes"]
    assert schemes["partnerApiKey"] == {**schemes["partnerApiKey"], "type": "apiKey", "in": "header", "name": "x-api-key"}
    for path, _, op in operations(document):
        branch = re.match(r"/api/gateway/((?:ia/|integrations/)?v\d)/", path).group(1)
        suffix = "".join(p.capitalize() for p in branch.split("/"))
        wanted = [{"partnerApiKey": []}] if path.endswith("/auth/authorize") else [{f"gateway{suffix}": []}]
        assert op["security"] == wanted, path
        assert schemes[next(iter(wanted[0]))]["type"] in ("apiKey", "http")


def test_the_audiences_split_the_whole_document(served):
    whole = {(p, m) for p, m, _ in operations(served["/openapi.json"])}
    parts = {a: {(p, m) for p, m, _ in operations(served[f"/openapi/{a}.json"])} for a in AUDIENCES}
    assert set().union(*parts.values()) == whole
    assert sum(len(p) for p in parts.values()) == len(whole)
    assert all(p.startswith("/api/gateway/") for p, _ in parts["partner"])
    assert all(p.startswith(("/api/postsales/", "/api/integrations/post-sales")) for p, _ in parts["holder"])
    assert ("/api/integrations/post-sales", "post") in parts["holder"]
    assert {("/api/trpc/{path}", "post"), ("/api/integrations/dispatch", "post"), ("/backoffice", "get")} <= parts["internal"]
    partner = served["/openapi/partner.json"]
    assert "TrpcResult" not in partner["components"]["schemas"]
    assert set(partner["components"]["securitySchemes"]) == {"partnerApiKey", *(
        f"gateway{s}" for s in ("V1", "V2", "IaV1", "IaV2", "IntegrationsV1", "IntegrationsV2"))}


def test_servers_are_public_base_url_or_relative():
    assert OpenApi(document_branches(), Config.from_env({}).openapi_server).servers == [{"url": "/"}]
    config = Config.from_env({"PUBLIC_BASE_URL": "https://api.example.com/"})
    assert OpenApi(document_branches(), config.openapi_server).servers == [{"url": "https://api.example.com"}]


def _resolve(document, value):
    while "$ref" in value:
        node = document
        for key in value["$ref"][2:].split("/"):
            node = node[key]
        value = node
    return value


def test_success_envelopes_say_success_true_and_data_are_always_sent(served):
    document = served["/openapi.json"]
    seen = 0
    for path, method, op in operations(document):
        for status, response in op["responses"].items():
            schema = _resolve(document, response).get("content", {}).get("application/json", {}).get("schema")
            schema = _resolve(document, schema) if schema else {}
            if status.startswith("2") and "success" in schema.get("properties", {}):
                seen += 1
                assert schema["properties"]["success"] == {"type": "boolean", "const": True}, (method, path)
                assert {"success", "data"} <= set(schema.get("required", [])), (method, path)
    assert seen > 20


def test_every_answer_declares_its_headers_and_the_errors_every_route_shares(served):
    document = served["/openapi.json"]
    for path, method, op in operations(document):
        for status, response in op["responses"].items():
            headers = _resolve(document, response).get("headers", {})
            assert "X-Request-Id" in headers, (method, path, status)
            if status in ("429", "503"):
                assert "Retry-After" in headers, (method, path, status)
    item = document["paths"]["/api/gateway/v2/risk-items"]["get"]["responses"]
    assert {"400", "401", "429", "500", "503"} <= set(item)
    assert {"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} <= set(item["200"]["headers"])
    assert item["503"] == {"$ref": "#/components/responses/DatabaseBusy"}
    create = document["paths"]["/api/gateway/v1/risk-items"]["post"]
    assert {"409", "413", "415", "422"} <= set(create["responses"])
    assert create["requestBody"]["content"]["application/json"]["example"]["variant"] == "travel"


def test_v2_list_has_no_defaults_the_server_refuses_together(served):
    """A generated client called with no arguments sends every default: from and limit together
    are 400 INVALID_PAGINATION."""
    document = served["/openapi.json"]
    op = document["paths"]["/api/gateway/v2/risk-items"]["get"]
    for parameter in op["parameters"]:
        assert "default" not in _resolve(document, parameter)["schema"], parameter


def test_error_codes_come_from_one_source(served):
    """The ErrorCode enum is app/errors.py CODES, which holds every code the SQL and the app raise,
    and docs/api.md's table lists them all with their status."""
    document = served["/openapi.json"]
    assert document["components"]["schemas"]["ErrorCode"]["enum"] == list(CODES)
    error_body = document["components"]["schemas"]["ErrorBody"]
    assert error_body["properties"]["code"] == {"$ref": "#/components/schemas/ErrorCode"}
    raised = set()
    for path in (ROOT / "sql" / "deploy").glob("*.sql"):
        if path.stem == "admin" or path.stem.startswith("admin_"):  # the command line's codes, never answered over HTTP
            continue
        raised |= set(re.findall(r"DETAIL = '([A-Z][A-Z0-9_]+)'", path.read_text()))
        raised |= set(re.findall(r"unprocessable\('([A-Z][A-Z0-9_]+)'", path.read_text()))
    for path in (ROOT / "app").rglob("*.py"):
        text = path.read_text()
        raised |= set(re.findall(r"ApiError\(\d{3}, \"([A-Z][A-Z0-9_]+)\"", text))
        raised |= set(re.findall(r"bad_request\([^()]*\"([A-Z][A-Z0-9_]+)\"", text))
    from app.errors import DEFAULT_CODES
    from app.postsales.auth import OTP_ERRORS
    raised |= set(OTP_ERRORS) | set(DEFAULT_CODES.values())
    assert raised - set(CODES) == set(), "codes missing from app/errors.py CODES"
    for status, _, _ in CODES.values():
        assert status in DEFAULT_CODES or status == 503
    assert error_table() in (ROOT / "docs" / "api.md").read_text(), \
        "docs/api.md's error table is not app/errors.py CODES: paste `python -m app openapi --error-table`"


def _schemas_reached(document: dict, value) -> list[dict]:
    """Every schema object under `value`, following $refs (each component once)."""
    seen, found, pending = set(), [], [value]
    while pending:
        item = pending.pop()
        if isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str):
                if ref not in seen:
                    seen.add(ref)
                    pending.append(_resolve(document, item))
                continue
            found.append(item)
            pending.extend(item.values())
    return found


@pytest.mark.parametrize("url", DOCUMENTS)
def test_no_request_body_declares_a_default(served, url):
    """openapi-typescript's default `defaultNonNullable` makes a property with a `default` required
    in a named schema, request bodies included: a body that leaves it out would not
    type-check. The server's defaults are said in descriptions instead."""
    document = served[url]
    defaults = [f"{m} {p}: {s}" for p, m, op in operations(document)
                for s in _schemas_reached(document, op.get("requestBody", {})) if "default" in s]
    assert defaults == []


def test_every_partner_body_and_answer_is_a_named_schema(served):
    """Generated clients name what a partner handles after the schema (`WebhookDeliveryWindowAnswer`),
    never after the operation (`ListWebhookDeliveriesV1Response200`): every request body and
    answer of the partner document, and the webhook it receives, is a $ref to a component."""
    document = served["/openapi/partner.json"]
    items = list(operations(document)) + [(f"webhooks/{name}", m, op) for name, item in document["webhooks"].items()
                                          for m, op in item.items()]
    inline = []
    for path, method, op in items:
        bodies = [("body", op.get("requestBody", {}))] + [
            (code, r) for code, r in op.get("responses", {}).items() if "$ref" not in r]
        for where, part in bodies:
            for media in part.get("content", {}).values():
                if "$ref" not in media.get("schema", {}):
                    inline.append(f"{method} {path} {where}")
    assert inline == []
    event = document["webhooks"]["emissionEvent"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert event == {"$ref": "#/components/schemas/WebhookEvent"}
    assert {"WebhookEvent", "WebhookEventData", "WebhookDelivery", "WebhookDeliveryWindowAnswer",
            "WebhookDeliveryListAnswer", "WebhookDeliveryAnswer"} <= set(document["components"]["schemas"])
    assert "webhooks" not in served["/openapi/holder.json"]


# What each audience's description must not speak of: routes its document does not hold.
FOREIGN_WORDS = {"partner": ("tRPC", "RPC", "holder", "post-sales", "dashboard", "integration endpoint"),
                 "holder": ("tRPC", "RPC", "partner", "gateway", "dashboard", "integration endpoint")}


@pytest.mark.parametrize("audience", sorted(FOREIGN_WORDS))
def test_an_audience_document_describes_only_what_it_holds(served, audience):
    document = served[f"/openapi/{audience}.json"]
    description = document["info"]["description"]
    spoken = [w for w in FOREIGN_WORDS[audience] if w.lower() in description.lower()]
    assert not spoken, f"the {audience} document's description speaks of {spoken}: {description}"
    assert "X-Request-Id" in description and "envelope" in description, "the shared paragraph stays"
    assert not [k for k in document if k.startswith("x-")], "no internal extension leaks into it"
