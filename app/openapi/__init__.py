"""The OpenAPI documents: one YAML file per surface beside this module, merged at first request.

`core.yaml` holds `info`, the envelope, the shared components and the operations routes; each
other file adds its `paths`, `components` and `tags`. What every operation shares is added here,
so that no file repeats it (CONTRIBUTING.md, "API reference"):

- the audience: an operation's `x-audience` (partner, holder or internal), else its file's
  top-level `x-audience`, else by its path (PREFIX_AUDIENCES: /api/gateway/ partner,
  /api/postsales/ and /api/integrations/post-sales holder, anything else internal). Served as
  /openapi.json (everything) and /openapi/<audience>.json (that audience's operations and the
  components they reach);
- the gateway branches: gateway.yaml's `x-gateway-branches` templates are written out for every
  branch the caller gives (app.gateway BRANCHES and RISK_ITEM_BRANCHES: this core module does
  not import a surface), operationIds suffixed with the branch (authorizeV1, ...);
- `security: [{gatewayBearer: []}]` on a path under /api/gateway/<branch>/ becomes that
  branch's own scheme (gatewayV1, gatewayIaV2, ...), generated here with the branch rule;
- responses: `X-Request-Id` on every answer, X-RateLimit-* on a gateway bearer route's success
  and on every 429, 413/415 where a body is read (and the nesting limit in a JSON body's
  description), 500 and 503 DATABASE_BUSY / DATABASE_UNAVAILABLE on every envelope route that
  reads the database (`x-database: false` opts out);
- the `ErrorCode` enum, from app/errors.py CODES;
- `servers`: PUBLIC_BASE_URL when it is set, else the relative "/".
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import falcon
import orjson

from app.errors import ApiError

HERE = Path(__file__).resolve().parent
AUDIENCES = ("partner", "holder", "internal")
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_HEADER = "#/components/headers/"


class Branches(NamedTuple):
    """The gateway's branches: branch -> the name of its secret; the branches with risk items ->
    whether their list has keyset pages (app.gateway BRANCHES, RISK_ITEM_BRANCHES)."""
    secrets: dict[str, str]
    risk_items: dict[str, bool]


def operations(document: dict) -> Iterator[tuple[str, str, dict]]:
    for path, item in document.get("paths", {}).items():
        for method in METHODS:
            if isinstance(item.get(method), dict):
                yield path, method, item[method]


# The audience of an operation whose file names none, by its path's prefix.
PREFIX_AUDIENCES = (("/api/gateway/", "partner"), ("/api/postsales/", "holder"),
                    ("/api/integrations/post-sales", "holder"))


def _merge(document: dict, part: dict, audience: str | None) -> None:
    for path, item in (part.get("paths") or {}).items():
        default = audience or next((a for prefix, a in PREFIX_AUDIENCES if path.startswith(prefix)), "internal")
        for method in METHODS:
            if isinstance(item.get(method), dict):
                item[method].setdefault("x-audience", default)
        if path in document.setdefault("paths", {}):
            raise ValueError(f"{path} is documented twice")
        document["paths"][path] = item
    for kind, items in (part.get("components") or {}).items():
        known = document.setdefault("components", {}).setdefault(kind, {})
        for name, value in items.items():
            if name in known and known[name] != value:
                raise ValueError(f"components/{kind}/{name} is defined twice, differently")
            known[name] = value
    for name, item in (part.get("webhooks") or {}).items():  # OpenAPI 3.1: the events we POST to partners
        if name in document.setdefault("webhooks", {}):
            raise ValueError(f"webhook {name} is documented twice")
        document["webhooks"][name] = item
    document.setdefault("tags", []).extend(part.get("tags", []))


def _branch_suffix(branch: str) -> str:
    """'ia/v1' -> 'IaV1': the operationId and security scheme suffix of a gateway branch."""
    return "".join(part[:1].upper() + part[1:] for part in branch.split("/"))


def _fill(value: Any, words: dict[str, str]) -> Any:
    if isinstance(value, str):
        for key, word in words.items():
            value = value.replace("{" + key + "}", word)
        return value
    if isinstance(value, dict):
        return {k: _fill(v, words) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, words) for v in value]
    return value


GATEWAY = "/api/gateway"


def _expand_branches(document: dict, templates: dict, branches: Branches) -> None:
    for branch, secret in branches.secrets.items():
        suffix = _branch_suffix(branch)
        words = {"branch": branch, "secret": secret}
        paths = dict(templates.get("every", {}))
        if branch in branches.risk_items:
            paths.update(templates.get("risk-items", {}))
        for relative, item in paths.items():
            item = _fill(copy.deepcopy(item), words)
            if relative == "/risk-items" and branches.risk_items.get(branch):
                item["get"] = _fill(copy.deepcopy(templates["keyset-list"]), words)
            for method in METHODS:
                if isinstance(item.get(method), dict):
                    item[method]["operationId"] += suffix
            _merge(document, {"paths": {f"{GATEWAY}/{branch}{relative}": item}}, "partner")


def _gateway_security(document: dict, branches: Branches) -> None:
    """`gatewayBearer` under /api/gateway/<branch>/ -> the branch's own scheme."""
    schemes = document.setdefault("components", {}).setdefault("securitySchemes", {})
    for branch, secret in branches.secrets.items():
        schemes[f"gateway{_branch_suffix(branch)}"] = {
            "type": "http", "scheme": "bearer", "bearerFormat": "JWT",
            "description": f"The access_token of GET {GATEWAY}/{branch}/auth/authorize (signed with {secret}, "
                           f"`aud` gateway/{branch}); refused on every other branch."}
    for path, _, operation in operations(document):
        for requirement in operation.get("security", []):
            if "gatewayBearer" in requirement:
                branch = next((b for b in sorted(branches.secrets, key=len, reverse=True)
                               if path.startswith(f"{GATEWAY}/{b}/")), None)
                if branch is None:
                    raise ValueError(f"{path}: gatewayBearer outside a gateway branch")
                requirement[f"gateway{_branch_suffix(branch)}"] = requirement.pop("gatewayBearer")


def _error_codes(document: dict) -> None:
    from app.errors import CODES

    lines = [f"- `{code}` ({status}){': details ' + details if details else ''}: {when}"
             for code, (status, details, when) in CODES.items()]
    document["components"]["schemas"]["ErrorCode"] = {
        "type": "string", "enum": list(CODES),
        "description": "The stable code of an error (app/errors.py CODES):\n" + "\n".join(lines)}


def error_table() -> str:
    """docs/api.md's table of the error codes, from app/errors.py CODES."""
    from app.errors import CODES

    rows = ["| status | code | details | when |", "|---|---|---|---|"]
    for code, (status, details, when) in sorted(CODES.items(), key=lambda c: (c[1][0], c[0])):
        rows.append(f"| {status} | `{code}` | {details or ''} | {when} |")
    return "\n".join(rows) + "\n"


def _uses_envelope(document: dict, response: dict) -> bool:
    """Whether a response (or the $ref'd component) answers in the error envelope or in JSON at all."""
    text = orjson.dumps(_resolve(document, response)).decode()
    return "application/json" in text and "Trpc" not in text


def _resolve(document: dict, value: dict) -> dict:
    while "$ref" in value:
        node: Any = document
        for key in value["$ref"].lstrip("#/").split("/"):
            node = node[key]
        value = node
    return value


def _depth_limit(body: dict) -> None:
    """A JSON body's description names the nesting limit (once, also for a shared component)."""
    from app.validation import MAX_JSON_DEPTH
    if "application/json" not in body.get("content", {}):
        return
    limit = (f"JSON nested at most {MAX_JSON_DEPTH} levels deep (objects and arrays; the body is level 1): "
             "a deeper body is refused before it is parsed, 400 VALIDATION_ERROR.")
    description = body.get("description", "")
    if limit not in description:
        body["description"] = f"{description.rstrip()} {limit}".lstrip()


def _responses(document: dict) -> None:
    components = document["components"]
    for response in components.get("responses", {}).values():
        response.setdefault("headers", {}).setdefault("X-Request-Id", {"$ref": _HEADER + "X-Request-Id"})
    for path, method, operation in operations(document):
        responses = operation.setdefault("responses", {})
        if "requestBody" in operation:  # every body is read by app/validation.py
            responses.setdefault("413", {"$ref": "#/components/responses/PayloadTooLarge"})
            responses.setdefault("415", {"$ref": "#/components/responses/UnsupportedMediaType"})
            _depth_limit(_resolve(document, operation["requestBody"]))
        envelope = any(_uses_envelope(document, r) for r in responses.values())
        if envelope and operation.get("x-database", True) and method != "options":
            responses.setdefault("500", {"$ref": "#/components/responses/InternalError"})
            responses.setdefault("503", {"$ref": "#/components/responses/DatabaseBusy"})
        rate_limited = any(k.startswith("gateway") for r in operation.get("security", []) for k in r)
        for status, response in responses.items():
            if "$ref" in response:
                continue
            headers = response.setdefault("headers", {})
            headers.setdefault("X-Request-Id", {"$ref": _HEADER + "X-Request-Id"})
            if rate_limited and status.startswith("2"):
                for name in ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"):
                    headers.setdefault(name, {"$ref": _HEADER + name})
            if status in ("429", "503"):
                headers.setdefault("Retry-After", {"$ref": _HEADER + "Retry-After"})
            if status == "429":  # every limit says which it is and when it resets
                for name in ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"):
                    headers.setdefault(name, {"$ref": _HEADER + name})


def load(branches: Branches) -> dict:
    """The whole document."""
    import yaml  # only when the document is first asked for: a serving process rarely is

    document = yaml.safe_load((HERE / "core.yaml").read_text())
    info = document["info"]
    intros, shared = info.pop("x-intro"), info.pop("x-shared")
    # Each audience's description, kept apart from what is served (for_audience picks one).
    document["x-descriptions"] = {audience: f"{intros[audience].rstrip()}\n{shared.rstrip()}\n"
                                  for audience in AUDIENCES}
    info["description"] = document["x-descriptions"]["internal"]
    _merge(document, {"paths": document.pop("paths", {})}, document.pop("x-audience", "internal"))
    templates = {}
    for path in sorted(HERE.glob("*.yaml")):
        if path.name == "core.yaml":
            continue
        part = yaml.safe_load(path.read_text()) or {}
        audience = part.get("x-audience")
        if audience not in (None, *AUDIENCES):
            raise ValueError(f"{path.name}: x-audience {audience!r} is none of {AUDIENCES}")
        _merge(document, part, audience)
        templates.update(part.get("x-gateway-branches", {}))
    _expand_branches(document, templates, branches)
    _gateway_security(document, branches)
    _error_codes(document)
    _responses(document)
    return document


def _refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$ref" and isinstance(item, str):
                yield item
            else:
                yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def for_audience(document: dict, audience: str) -> dict:
    """The operations of one audience, with only the components, tags and schemes they use."""
    part = {k: v for k, v in document.items() if k not in ("paths", "components", "tags", "webhooks", "x-descriptions")}
    # Its own description: a partner's document never speaks of routes it does not hold.
    part["info"] = {**document["info"], "title": f"{document['info']['title']} ({audience})",
                    "description": document["x-descriptions"][audience]}
    part["paths"] = {}
    for path, item in document["paths"].items():
        kept = {m: op for m, op in item.items() if m not in METHODS or op.get("x-audience") == audience}
        if any(m in METHODS for m in kept):
            part["paths"][path] = kept
    if audience == "partner" and document.get("webhooks"):  # the events partners receive
        part["webhooks"] = document["webhooks"]
    components: dict[str, dict] = {}
    pending = list(_refs(part["paths"])) + list(_refs(part.get("webhooks", {})))
    while pending:
        ref = pending.pop()
        _, _, kind, name = ref.split("/", 3)
        if name in components.get(kind, {}):
            continue
        value = document["components"][kind][name]
        components.setdefault(kind, {})[name] = value
        pending.extend(_refs(value))
    schemes = {name for _, _, op in operations(part) for r in op.get("security", []) for name in r}
    if schemes:
        components["securitySchemes"] = {k: v for k, v in document["components"]["securitySchemes"].items()
                                         if k in schemes}
    part["components"] = components
    used = {tag for _, _, op in operations(part) for tag in op.get("tags", [])}
    used |= {tag for item in part.get("webhooks", {}).values() for op in item.values() for tag in op.get("tags", [])}
    part["tags"] = [t for t in document.get("tags", []) if t["name"] in used]
    return part


class OpenApi:
    """GET /openapi.json and /openapi/{audience}.json: built once, on the first request."""

    def __init__(self, branches: Branches, public_base_url: str | None = None,
                 internal_allowed: Callable[[falcon.Request], bool] | None = None) -> None:
        self.branches = branches
        self.servers = [{"url": public_base_url or "/"}]
        self.bodies: dict[str | None, bytes] = {}
        # The documents that describe internal routes (the whole one, and `internal`): to whom
        # they may be shown; None: to everyone (development).
        self.internal_allowed = internal_allowed

    def body(self, audience: str | None) -> bytes:
        if audience not in self.bodies:
            document = load(self.branches)
            document["servers"] = self.servers
            self.bodies[None] = orjson.dumps(document)
            for name in AUDIENCES:
                self.bodies[name] = orjson.dumps(for_audience(document, name))
        return self.bodies[audience]

    async def on_get(self, req: falcon.Request, resp: falcon.Response, audience: str | None = None) -> None:
        if audience is not None and audience not in AUDIENCES:
            raise falcon.HTTPNotFound()
        if audience in (None, "internal") and self.internal_allowed and not self.internal_allowed(req):
            raise ApiError(403, "FORBIDDEN", "the internal API reference is served only in development or to "
                                             "METRICS_ALLOWED_IPS; partners read /openapi/partner.json")
        resp.data = self.body(audience)
        resp.content_type = falcon.MEDIA_JSON

