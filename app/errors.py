"""Errors and the envelope every surface (but tRPC) answers with.

    {"success": false, "error": {"code": "STABLE_CODE", "message": "...", "details": ...},
     "requestId": "..."}

SQL functions signal domain outcomes with SQLSTATE `PT` + the HTTP status (as PostgREST
does), the stable code in DETAIL and optional JSON details in HINT:

    RAISE EXCEPTION USING ERRCODE = 'PT401', MESSAGE = 'access denied', DETAIL = 'ACCESS_DENIED';

A data exception (SQLSTATE class 22: NUL in text, a value out of range...) that got past
app/validation.py is the client's bad input: 400 VALIDATION_ERROR, never a 500. So is a CHECK
(of a table or a domain) that refuses a value: its field and its sentence come from the
database, where the rule is (`COMMENT ON CONSTRAINT`, read through insurance.check_rules() by
`CheckRules`): one text per rule, the same that gateway._broken_rules reports. Any other
database or Python error becomes a generic 500: no SQL text, stack trace or secret
ever reaches a client; the log keeps the cause with the request id.
"""
from __future__ import annotations

import time
from typing import Any

import asyncpg
import falcon
import orjson
import structlog

from app.db import ANON, DatabaseBusy, unavailable

log = structlog.get_logger("app.errors")

DEFAULT_CODES = {
    400: "BAD_REQUEST",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    406: "NOT_ACCEPTABLE",
    409: "CONFLICT",
    411: "LENGTH_REQUIRED",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    422: "UNPROCESSABLE_ENTITY",
    429: "RATE_LIMITED",
    500: "INTERNAL_ERROR",
    503: "SERVICE_UNAVAILABLE",
}

# Every code the envelope can carry: (status, the details it carries or None, when). The one
# source of the OpenAPI document's `ErrorCode` enum and of the table in docs/api.md; a test
# (tests/test_openapi.py) finds every code the SQL and the app raise here. `details` names a
# schema of app/openapi/core.yaml (`*Details`, `FieldProblems`).
CODES: dict[str, tuple[int, str | None, str]] = {
    "BAD_REQUEST": (400, "IdDetails", "a request this route cannot read (another 400 than those below)"),
    "MALFORMED_JSON": (400, None, "the body is not JSON (or not UTF-8)"),
    "VALIDATION_ERROR": (400, "FieldProblems", "a body, parameter or path id that breaks a rule (the app's or a table's "
                         "CHECK); every field in details"),
    "MISSING_API_KEY": (400, None, "authorize without `x-api-key`"),
    "MISSING_BEARER_TOKEN": (400, "HintDetails", "no or malformed `Authorization: Bearer`"),
    "INVALID_WINDOW": (400, "WindowDetails", "a gateway window out of bounds (0 <= from <= to, at most 100 items)"),
    "INVALID_PAGINATION": (400, "LimitDetails", "from/to mixed with limit/cursor, or a limit out of 1..100"),
    "INVALID_CURSOR": (400, None, "a cursor this API did not return"),
    "UNAUTHORIZED": (401, None, "no live dashboard session, or a service call without the service role"),
    "INVALID_API_KEY": (401, None, "an unknown API key"),
    "TOKEN_EXPIRED": (401, None, "\"Access token expired\""),
    "INVALID_TOKEN": (401, "HintDetails", "\"Invalid access token\": wrong secret, branch or surface, tampered, "
                      "revoked channel, rotated key"),
    "ACCESS_DENIED": (401, None, "\"access denied\": the holder is not a claimant of the item (or it does not exist)"),
    "INVALID_CREDENTIALS": (401, None, "wrong dashboard e-mail or password"),
    "OTP_INVALID": (401, None, "a wrong, unknown or used login code"),
    "OTP_EXPIRED": (401, None, "an expired login code"),
    "FORBIDDEN": (403, None, "a foreign Origin on a dashboard route"),
    "ACCOUNT_DISABLED": (403, None, "the right dashboard password of a disabled user (a wrong one is INVALID_CREDENTIALS)"),
    "CSRF_TOKEN_INVALID": (403, None, "a back-office form without its CSRF token"),
    "CHANNEL_REVOKED": (403, None, "a revoked channel's API key"),
    "BRANCH_NOT_ALLOWED": (403, "BranchDetails", "a gateway branch the channel may not use"),
    "PACKAGE_NOT_ALLOWED": (403, "FieldProblems", "a package the channel may not sell"),
    "NOT_FOUND": (404, "IdDetails", "no such route or resource"),
    "RISK_ITEM_NOT_FOUND": (404, None, "no such risk item (or another channel's)"),
    "EMISSION_NOT_FOUND": (404, None, "no such emission"),
    "ORDER_NOT_FOUND": (404, None, "no such order"),
    "WEBHOOK_DELIVERY_NOT_FOUND": (404, None, "no such webhook delivery (or another channel's)"),
    "METHOD_NOT_ALLOWED": (405, None, "a method the route does not answer"),
    "NOT_ACCEPTABLE": (406, None, "an Accept the route cannot answer"),
    "CONFLICT": (409, None, "the resource exists already"),
    "DUPLICATE_POLICY": (409, None, "the policy uid exists already in the package"),
    "EMISSION_IN_PROGRESS": (409, "EmissionDetails", "another call holds the emission key; see Retry-After"),
    "WEBHOOK_ENDPOINT_REMOVED": (409, None, ("a redelivery of a delivery whose endpoint the channel no longer has "
                                             "for its event type (nothing queued)")),
    "LENGTH_REQUIRED": (411, None, "a body without a length"),
    "PAYLOAD_TOO_LARGE": (413, "LimitDetails", "the body exceeds MAX_BODY_BYTES (16 KiB on anonymous routes)"),
    "UNSUPPORTED_MEDIA_TYPE": (415, None, "a body that is not application/json"),
    "UNPROCESSABLE_ENTITY": (422, None, "a value a table refuses (a referenced row missing)"),
    "UNKNOWN_PACKAGE": (422, None, "no such package"),
    "INVALID_VARIANT": (422, "VariantsDetails", "a variant the package does not sell"),
    "RESERVED_FIELD": (422, "FieldProblems", "metadata holds a key the system owns"),
    "FIELD_NOT_EDITABLE": (422, "FieldProblems", "a post-sales change outside the allow-list"),
    "INVALID_VALUE": (422, "FieldProblems", "a post-sales value that breaks a rule"),
    "EMPTY_PATCH": (422, None, "a post-sales change with nothing to change"),
    "HOLDER_NOT_REMOVABLE": (422, None, "the holder beneficiary cannot be removed"),
    "SHARES_EXCEED_100": (422, "TotalDetails", "the beneficiaries' shares would add up to more than 100"),
    "BENEFICIARY_LIMIT": (422, "LimitDetails", "a risk item holds at most 50 beneficiaries (every surface)"),
    "RATE_LIMITED": (429, "RetryAfterDetails", "a rate limit is used up; see Retry-After and X-RateLimit-*"),
    "OTP_COOLDOWN": (429, "RetryAfterDetails", "a login code was sent less than 60 s ago"),
    "OTP_RATE_LIMITED": (429, "RetryAfterDetails", "5 login codes this hour for this e-mail from this client "
                         "address, or 20 for this e-mail from all addresses"),
    "OTP_IP_RATE_LIMITED": (429, "RetryAfterDetails", "too many OTP requests or failures from this client IP"),
    "OTP_ATTEMPTS_EXHAUSTED": (429, "RetryAfterDetails", "the code's failed verifications are used up"),
    "INTERNAL_ERROR": (500, None, "a fault of ours; the log has the cause under the request id"),
    "SERVICE_UNAVAILABLE": (503, None, "the service cannot answer now"),
    "DATABASE_BUSY": (503, None, "a statement, lock wait or pooled connection took too long, or a migration "
                                 "is replacing what the call needs; see Retry-After"),
    "DATABASE_UNAVAILABLE": (503, None, "no primary database answers (a failover or a restart in progress); "
                             "retry after Retry-After"),
}

# Integrity errors a client can cause with valid JSON: a fixed message, never the database's.
# (23514, a CHECK, is a VALIDATION_ERROR naming the field: see CheckRules.)
_INTEGRITY = {
    "23505": (409, "CONFLICT", "resource already exists"),
    "23503": (422, "UNPROCESSABLE_ENTITY", "a referenced resource does not exist"),
    "23502": (422, "UNPROCESSABLE_ENTITY", "data cannot be processed"),
}
_CHECK_VIOLATION = "23514"
_UNNAMED_RULE = "is not valid"  # a rule the catalog does not describe (yet): still no SQL
# SQLSTATE class 22, data exceptions (also asyncpg's own DataError for an argument it cannot
# encode, e.g. an integer beyond bigint): the input was bad, whatever the exact state.
_DATA_EXCEPTION = (400, "VALIDATION_ERROR", "a value in the request is malformed or out of range")


# The codes whose details name fields: always [{field, message}] (FieldProblems), whatever shape
# the raiser gave ({"field"}, {"fields"}, or none: a problem that is no one field's has field "").
FIELD_CODES = frozenset(code for code, (_, details, _) in CODES.items() if details == "FieldProblems")


def field_problems(details: Any, message: str) -> list[dict[str, str]]:
    """`details` as [{field, message}]: {"field": f} and {"fields": [f, ...]} take the error's
    message; a list keeps its items' own; nothing at all is one problem of no field."""
    if isinstance(details, list) and all(isinstance(d, dict) and "field" in d for d in details):
        return [{"field": str(d["field"]), "message": str(d.get("message") or message)} for d in details]
    if isinstance(details, dict) and isinstance(details.get("fields"), list):
        return [{"field": str(f), "message": message} for f in details["fields"]]
    if isinstance(details, dict) and "field" in details:
        return [{"field": str(details["field"]), "message": str(details.get("message") or message)}]
    return [{"field": "", "message": message}]


class ApiError(falcon.HTTPError):
    """An error with a stable code, rendered in the envelope."""

    def __init__(self, status: int, code: str | None = None, message: str = "",
                 details: Any = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(falcon.code_to_http_status(status), headers=headers)
        self.code = code or DEFAULT_CODES.get(status, "ERROR")
        self.message = message or falcon.code_to_http_status(status).split(" ", 1)[1].lower()
        self.details = field_problems(details, self.message) if self.code in FIELD_CODES else details


def rate_limited(code: str, message: str, retry_after: int, limit: int | None, reset: int | None = None) -> ApiError:
    """429 for a used-up limit, as every limit answers it (docs/api.md, "One shape on every
    surface"): details {"retryAfter": seconds}, Retry-After, and X-RateLimit-Limit (the limit
    refused), X-RateLimit-Remaining 0 and X-RateLimit-Reset (epoch seconds when a try may succeed)."""
    retry_after = max(1, int(retry_after))
    reset = int(time.time()) + retry_after if reset is None else reset
    headers = {"Retry-After": str(retry_after), "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)}
    if limit is not None:
        headers["X-RateLimit-Limit"] = str(limit)
    return ApiError(429, code, message, {"retryAfter": retry_after}, headers=headers)


def bad_request(message: str, code: str = "VALIDATION_ERROR", details: Any = None) -> ApiError:
    return ApiError(400, code, message, details)


def emission_answer(data: dict[str, Any]) -> dict[str, Any]:
    """An emission's outcome as every emission route answers it: `data` itself, or the ApiError
    of a refusal the database answered in its place ({"refused": {status, code, message}}), or
    409 EMISSION_IN_PROGRESS while another call holds the key (the caller retries after
    Retry-After; the outbox worker retries a 409 by itself)."""
    if "refused" in data:
        refused = data["refused"]
        raise ApiError(refused["status"], refused["code"], refused["message"])
    if data["status"] == "IN_PROGRESS":
        raise ApiError(409, "EMISSION_IN_PROGRESS", "another call is emitting this item",
                       details=data, headers={"Retry-After": "5"})
    return data


# statement_timeout, lock_timeout (and a cancelled statement): the database is busy, not broken.
_BUSY = frozenset({"57014", "55P03"})
# A migration replacing what a call needs: a function, table or schema missing between the DROP
# and the CREATE of a deploy (sqitch runs each change in its own transaction), or dropped and
# created again under a call that had looked up the old one (XX000 "cache lookup failed").
# Asking again after the deploy answers right: busy too, not a 500. Logged, since an app rolled
# out before its migration would answer this until the migration runs (docs/operations.md).
_REPLACED = frozenset({"42883", "42P01", "3F000"})


def database_busy() -> ApiError:
    """503 DATABASE_BUSY: a statement, a lock or a pooled connection took longer than allowed."""
    return ApiError(503, "DATABASE_BUSY", "the database is busy; try again shortly",
                    headers={"Retry-After": "1"})


# How long a caller waits before trying again while the database fails over: the formation
# promotes its standby within seconds (docs/operations.md "High availability").
UNAVAILABLE_RETRY_AFTER = "2"


def database_unavailable() -> ApiError:
    """503 DATABASE_UNAVAILABLE: the primary is out of reach (app/db.py DatabaseUnavailable)."""
    return ApiError(503, "DATABASE_UNAVAILABLE", "the database is unavailable; try again shortly",
                    headers={"Retry-After": UNAVAILABLE_RETRY_AFTER})


class CheckRules:
    """The CHECK rules of the tables and domains, as the database describes them: {(schema,
    table or domain, constraint): ([column, ...], sentence)} from insurance.check_rules(),
    read on the first violation (and again after a failed read). A rule's sentence is its
    `COMMENT ON CONSTRAINT`: the text lives beside the rule, never copied here."""

    def __init__(self, db=None) -> None:
        self.db = db
        self.rules: dict[tuple[str, str, str], tuple[list[str], str]] | None = None

    async def ensure(self) -> None:
        if self.rules is not None or self.db is None:
            return
        try:
            found = orjson.loads(await self.db.call(ANON, None, "insurance.check_rules"))
        except Exception as exc:  # noqa: BLE001 - the answer falls back to a sentence without the rule's own
            log.warning("check_rules_unreadable", error=type(exc).__name__)
            return
        self.rules = {(r["schema"], r["relation"], r["constraint"]): (r["columns"], r["message"]) for r in found}

    def problems(self, exc: asyncpg.PostgresError) -> list[dict[str, str]]:
        """[{field, message}] of the CHECK `exc` reports: a table's rule names its columns; a
        domain's names the column asyncpg reports, if any."""
        relation = getattr(exc, "table_name", None) or getattr(exc, "data_type_name", None) or ""
        key = (getattr(exc, "schema_name", None) or "", relation, getattr(exc, "constraint_name", None) or "")
        columns, message = (self.rules or {}).get(key, ([], _UNNAMED_RULE))
        columns = columns or [getattr(exc, "column_name", None) or ""]
        return [{"field": column, "message": message} for column in columns]


def check_violation(exc: asyncpg.PostgresError, rules: CheckRules | None) -> ApiError:
    problems = (rules or CheckRules()).problems(exc)
    first = problems[0]
    return ApiError(400, "VALIDATION_ERROR", f"{first['field'] or 'a value'} {first['message']}", problems)


def from_database(exc: asyncpg.PostgresError, rules: CheckRules | None = None) -> ApiError | None:
    """The ApiError a database error stands for, or None for an unexpected one (a 500)."""
    if unavailable(exc):
        return database_unavailable()
    state = exc.sqlstate or ""
    if state.startswith("PT") and state[2:].isdigit():
        details = None
        if exc.hint:
            try:
                details = orjson.loads(exc.hint)
            except orjson.JSONDecodeError:
                details = exc.hint
        return ApiError(int(state[2:]), exc.detail or None, exc.message or "", details)
    if state in _BUSY:
        return database_busy()
    if state == _CHECK_VIOLATION:
        return check_violation(exc, rules)
    if state in _REPLACED or (state == "XX000" and (exc.message or "").startswith("cache lookup failed")):
        log.warning("database_object_missing", sqlstate=state, error=exc.message)
        return database_busy()
    if state in _INTEGRITY:
        status, code, message = _INTEGRITY[state]
        return ApiError(status, code, message)
    if state.startswith("22"):
        return ApiError(*_DATA_EXCEPTION)
    return None


def envelope(code: str, message: str, details: Any = None, request_id: str | None = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        error["details"] = details
    body: dict[str, Any] = {"success": False, "error": error}
    if request_id:
        body["requestId"] = request_id
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError:  # details that JSON cannot carry (an integer beyond 64 bits)
        error.pop("details", None)
        return orjson.dumps(body)


def serialize_http_error(req: falcon.Request, resp: falcon.Response, exc: falcon.HTTPError) -> None:
    """Falcon's error serializer: every HTTPError (404, 405, ApiError...) in the envelope."""
    status = exc.status_code
    if isinstance(exc, ApiError):
        code, message, details = exc.code, exc.message, exc.details
    else:
        code = DEFAULT_CODES.get(status, "ERROR")
        message = (exc.description or exc.title or "").rstrip(".") or code.lower()
        details = None
        if status == 404:
            message = "resource not found"
        elif status == 405:
            message = "method not allowed"
    resp.content_type = falcon.MEDIA_JSON
    resp.data = envelope(code, message, details, getattr(req.context, "request_id", None))


def database_error_handler(rules: CheckRules):
    """The app's handler of database errors (a CHECK's rules read from `rules`)."""
    async def handle_database_error(req: falcon.Request, resp: falcon.Response,
                                    exc: asyncpg.PostgresError, params: dict) -> None:
        if exc.sqlstate == _CHECK_VIOLATION:
            await rules.ensure()
        api_error = from_database(exc, rules)
        if api_error is None:
            await handle_unexpected(req, resp, exc, params)
            return
        raise api_error
    return handle_database_error


async def handle_unexpected(req: falcon.Request, resp: falcon.Response, exc: Exception,
                            params: dict) -> None:
    if isinstance(exc, DatabaseBusy):  # the pool's wait (app/db.py): a 503, as a statement's timeout
        raise database_busy() from None
    if unavailable(exc):  # a connection lost outside app/db.py's calls: retryable, never a 500
        # cause: what asyncpg raised (app/db.py wraps it in DatabaseUnavailable), by its type.
        log.warning("database_unavailable", request_id=getattr(req.context, "request_id", None),
                    path=req.path, error=type(exc).__name__,
                    cause=type(exc.__cause__).__name__ if exc.__cause__ is not None else None)
        raise database_unavailable()
    log.error("unhandled_error", request_id=getattr(req.context, "request_id", None),
              method=req.method, path=req.path, exc_info=exc)
    resp.status = falcon.HTTP_500
    resp.content_type = falcon.MEDIA_JSON
    resp.data = envelope("INTERNAL_ERROR", "internal server error", None,
                         getattr(req.context, "request_id", None))


class RouteNotFound:
    """404 for a path no route matches; under a known prefix (a surface, a gateway branch) the
    answer lists that prefix's routes, so that a caller sees what it meant to call. The internal
    routes (/api/integrations/*, the worker's) are listed only to whom `internal_allowed` admits
    (None: anyone, as in development), as their reference is."""

    INTERNAL_PREFIX = "/api/integrations"

    def __init__(self, app, internal_allowed=None) -> None:
        self.app = app
        self.internal_allowed = internal_allowed
        self._prefixes: dict[str, list[str]] | None = None

    def _routes(self) -> dict[str, list[str]]:
        if self._prefixes is None:  # built on the first 404: the routes are all added by then
            from falcon.inspect import inspect_routes
            prefixes: dict[str, list[str]] = {}
            for route in inspect_routes(self.app):
                parts = route.path.split("/")
                # /api/<surface>/<version or branch>[/<version>], /backoffice
                depth = 5 if route.path.startswith(("/api/gateway/ia/", "/api/gateway/integrations/")) else \
                    4 if route.path.startswith(("/api/gateway/", "/api/postsales/")) else \
                    3 if route.path.startswith("/api/") else 2
                prefix = "/".join(parts[:depth])
                methods = sorted({m.method for m in route.methods if m.internal is False and m.method != "OPTIONS"})
                if prefix and methods:
                    prefixes.setdefault(prefix, []).append(f"{' '.join(methods)} {route.path}")
            self._prefixes = {p: sorted(r) for p, r in prefixes.items() if not p.endswith("}")}
        return self._prefixes

    async def __call__(self, req, resp, exc, params) -> None:
        found = [p for p in self._routes() if req.path == p or req.path.startswith(p + "/")]
        details = None
        if found:
            prefix = max(found, key=len)
            internal = prefix == self.INTERNAL_PREFIX or prefix.startswith(self.INTERNAL_PREFIX + "/")
            if not internal or self.internal_allowed is None or self.internal_allowed(req):
                details = {"prefix": prefix, "routes": self._routes()[prefix]}
        resp.status = falcon.HTTP_404
        resp.content_type = falcon.MEDIA_JSON
        resp.data = envelope("NOT_FOUND", "resource not found" if details is None else
                             f"no route {req.path}; the routes under {details['prefix']} are listed in details",
                             details, getattr(req.context, "request_id", None))
