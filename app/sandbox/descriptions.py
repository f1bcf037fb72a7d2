"""The insurers' descriptions: what the sandbox serves, read as data.

Each insurer module of app/orchestrator/insurers/ ships `<module>.sandbox.json` beside it: the
insurer's API written from the insurer's side (its routes, the JSON Schema of each request,
its credentials, its canned success, how it signals each error, and the auth_config that
points the adapter at the sandbox). The sandbox reads these files and imports no adapter: a
double built from the adapter's own mappers would agree with any mistake in them. Nor does
the adapter read its description: the two are written apart and must agree over HTTP.

    {"slug": "PROVIDER_A", "prefix": "/provider-a", "issues": "policies",
     "auth": {"type": "apiKey", "header": "X-Api-Key", "keys": {"KEY": {}}}
           | {"type": "bearer", "agentHeader": "X-Agent-Code"?, "keys": {"KEY": {"agentCode": "A"}}}
           | {"type": "oauth2", "tokenPath": "/idp/oauth/token", "identityProvider": "IDP",
              "clients": {"ID": "SECRET"}, "tokenTtl": 3600},
     "authConfig": {... "{sandbox}" stands for the sandbox's base URL ...},
     "errors": {"unauthorized" | "expiredToken" | "revokedToken" | "invalidRequest" |
                "missingIdempotencyKey": {"status": 401, "body": {...}, "headers": {...}}},
     "$defs": {... JSON Schema definitions the requests refer to as #/$defs/NAME ...},
     "routes": [{"method": "POST", "path": "/v1/travel/policies", "variant": "travel" | "variants": [...],
                 "request": {JSON Schema}, "rules": [{"sumAtMost": 100, "of": "list", "field": "f",
                 "reason": "..."}, {"matchesCredential": "field", "reason": "..."}],
                 "success": {"status": 201, "body": {"policyNumber": "PA-{seq:07d}", ...}}}]}

Templates in `success` and `errors`: {seq} (the insurer's counter), {uuid}, {body.a.b} (the
request's field), {credential.x} (the presenting credential's attribute), {reason}; a string
that is one placeholder keeps the value's type.
"""
from __future__ import annotations

import dataclasses
import functools
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastjsonschema
import orjson

from app.sandbox.faults import Invalid

# Beside the adapters, read as files (never imported): app/orchestrator/insurers/*.sandbox.json
DESCRIPTIONS = Path(__file__).resolve().parent.parent / "orchestrator" / "insurers"
SUFFIX = ".sandbox.json"

DEFAULT_ERRORS: dict[str, dict[str, Any]] = {
    "unauthorized": {"status": 401, "body": {"error": "unauthorized", "reason": "missing or unknown credentials"}},
    "expiredToken": {"status": 401, "body": {"error": "invalid_token", "reason": "the access token expired"},
                     "headers": {"WWW-Authenticate": 'Bearer error="invalid_token"'}},
    "revokedToken": {"status": 401, "body": {"error": "invalid_token", "reason": "the access token was revoked"},
                     "headers": {"WWW-Authenticate": 'Bearer error="invalid_token"'}},
    "invalidRequest": {"status": 400, "body": {"error": "invalid_request", "reason": "{reason}"}},
    "missingIdempotencyKey": {"status": 400, "body": {"error": "missing_idempotency_key",
                                                      "reason": "the Idempotency-Key header is required"}},
}
_PLACEHOLDER = re.compile(r"\{([a-zA-Z_][\w.]*)(?::([^{}]*))?\}")


def render(template: Any, values: dict[str, Any]) -> Any:
    """`template` with its placeholders filled from `values` (dotted names walk dicts)."""
    if isinstance(template, dict):
        return {k: render(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [render(v, values) for v in template]
    if not isinstance(template, str):
        return template

    def value(name: str) -> Any:
        if name == "uuid":
            return str(uuid.uuid4())
        current: Any = values
        for part in name.split("."):
            current = current.get(part) if isinstance(current, dict) else None
        return current

    whole = _PLACEHOLDER.fullmatch(template)
    if whole and not whole.group(2):
        return value(whole.group(1))
    return _PLACEHOLDER.sub(lambda m: format(value(m.group(1)), m.group(2) or ""), template)


@dataclasses.dataclass(frozen=True)
class Route:
    method: str
    path: str                      # the full path served: prefix + the route's own
    variants: tuple[str, ...]
    schema: dict[str, Any]         # the request's JSON Schema
    rules: tuple[dict[str, Any], ...]
    success: dict[str, Any]

    @functools.cached_property
    def validate(self) -> Callable[[Any], Any]:
        """The schema compiled once, at its first request (fastjsonschema: about 20 times faster
        than interpreting it on every request, which made the sandbox the slowest step of
        bench-emissions); a command that only reads credentials compiles nothing."""
        return fastjsonschema.compile(self.schema)

    def check(self, body: Any, credential: dict[str, Any]) -> None:
        """Raises Invalid with the insurer's reason when `body` breaks the description."""
        try:
            self.validate(body)
        except fastjsonschema.JsonSchemaValueException as exc:
            reason = exc.message
            reason = "body" + reason[4:] if reason.startswith("data ") else reason.removeprefix("data.")
            raise Invalid(reason[:500]) from None
        for rule in self.rules:
            if "sumAtMost" in rule:
                total = sum(entry.get(rule["field"], 0) for entry in body.get(rule["of"], []))
                if total > rule["sumAtMost"]:
                    raise Invalid(rule["reason"])
            elif "matchesCredential" in rule:
                field = rule["matchesCredential"]
                if body.get(field) != credential.get(field):
                    raise Invalid(rule["reason"])


@dataclasses.dataclass(frozen=True)
class Description:
    slug: str
    prefix: str
    issues: str                    # what a success makes: "policies" or "messages"
    auth: dict[str, Any]
    auth_config: dict[str, Any]
    errors: dict[str, dict[str, Any]]
    routes: tuple[Route, ...]

    @property
    def identity_provider(self) -> str | None:
        """The name its token endpoint records under (faults name it), for an OAuth2 insurer."""
        if self.auth.get("type") != "oauth2":
            return None
        return self.auth.get("identityProvider") or f"{self.slug}_IDP"

    def error(self, name: str, **values: Any) -> tuple[int, Any, dict[str, str]]:
        answer = self.errors.get(name) or DEFAULT_ERRORS[name]
        return answer["status"], render(answer["body"], values), dict(answer.get("headers") or {})

    def config_for(self, base_url: str) -> dict[str, Any]:
        """auth_config pointing the adapter at a sandbox served at `base_url`."""
        base = base_url.rstrip("/")

        def fill(value: Any) -> Any:
            if isinstance(value, dict):
                return {k: fill(v) for k, v in value.items()}
            if isinstance(value, list):
                return [fill(v) for v in value]
            return value.replace("{sandbox}", base) if isinstance(value, str) else value
        return fill(self.auth_config)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Description:
        defs = data.get("$defs", {})
        routes = []
        for route in data["routes"]:
            variants = route.get("variants") or ([route["variant"]] if route.get("variant") else [])
            routes.append(Route(route.get("method", "POST").upper(), data["prefix"] + route["path"], tuple(variants),
                                {"$defs": defs, **route["request"]}, tuple(route.get("rules", ())), route["success"]))
        return cls(slug=data["slug"], prefix=data["prefix"], issues=data.get("issues", "policies"),
                   auth=data["auth"], auth_config=data.get("authConfig", {}), errors=data.get("errors", {}),
                   routes=tuple(routes))

    @property
    def variants(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v for route in self.routes for v in route.variants))


def load(path: Path) -> Description:
    return Description.from_json(orjson.loads(path.read_bytes()))


@functools.cache
def descriptions(folder: Path = DESCRIPTIONS) -> tuple[Description, ...]:
    """Every insurer described in `folder`, by slug."""
    found = tuple(load(path) for path in sorted(folder.glob(f"*{SUFFIX}")))
    slugs = [d.slug for d in found]
    if len(set(slugs)) != len(slugs):
        raise ValueError(f"two descriptions of one insurer in {folder}: {slugs}")
    return found
