"""GET/POST /api/trpc/{path}: parse a tRPC call or batch, run its procedures, answer in tRPC's envelope.

Errors never leave through app/errors.py: the real client can only read tRPC's error shape
(a numeric `code`), so every failure, expected or not, is answered here.
"""
from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import falcon
import structlog
from pydantic import ValidationError

from app import errors, validation
from app.dashboard import auth
from app.dashboard.protocol import (
    MISSING,
    TrpcError,
    batch_status,
    dumps,
    error_item,
    from_superjson,
    is_superjson,
    result_item,
    stream_head,
)
from app.dashboard.router import PROCEDURES, Context, Procedure
from app.db import DatabaseBusy, Identity, unavailable

log = structlog.get_logger("app.dashboard")

METHODS = {"query": "GET", "mutation": "POST"}


class _Call:
    __slots__ = ("index", "input", "input_error", "path", "procedure")

    def __init__(self, index: int, path: str) -> None:
        self.index = index
        self.path = path
        self.procedure: Procedure | None = PROCEDURES.get(path)
        self.input: Any = MISSING
        self.input_error: TrpcError | None = None


def _is_json(req: falcon.Request) -> bool:
    return (req.content_type or "").split(";", 1)[0].strip().lower() == falcon.MEDIA_JSON


def _accepts_jsonl(req: falcon.Request) -> bool:
    trpc_accept = req.get_header("trpc-accept")
    if trpc_accept is not None:
        return trpc_accept == "application/jsonl"
    return any(t.strip() == "application/jsonl" for t in (req.get_header("Accept") or "").split(","))


def _validation_error(exc: ValidationError) -> TrpcError:
    issues = [{"path": list(e["loc"]), "message": e["msg"]} for e in exc.errors(include_url=False)]
    summary = "; ".join(f"{'.'.join(map(str, i['path'])) or 'input'}: {i['message']}" for i in issues[:5])
    return TrpcError("BAD_REQUEST", f"Invalid input: {summary}", {"issues": issues})


def _unexpected(exc: BaseException, req: falcon.Request, path: str | None) -> TrpcError:
    """A database outcome the SQL function signalled (PTnnn), or a generic 500 with nothing inside."""
    api_error = errors.from_database(exc) if isinstance(exc, asyncpg.PostgresError) else None
    if isinstance(exc, errors.ApiError):  # e.g. DATABASE_BUSY from the pool
        api_error = exc
    elif isinstance(exc, DatabaseBusy):  # the pool's wait (app/db.py)
        api_error = errors.database_busy()
    elif unavailable(exc):  # a failover in progress (app/db.py DatabaseUnavailable)
        api_error = errors.database_unavailable()
    if api_error is not None:
        return TrpcError.from_status(api_error.status_code, api_error.message)
    log.error("trpc_unhandled_error", request_id=getattr(req.context, "request_id", None), path=path,
              exc_info=exc)
    return TrpcError("INTERNAL_SERVER_ERROR", "Internal server error")


class Trpc(auth.Preflight):
    """One resource for every procedure; the procedure path is the last URL segment."""

    allow = "GET, POST, OPTIONS"

    def __init__(self, services) -> None:
        self.services = services
        self.origins = auth.allowed_origins(services.config)

    async def on_get(self, req: falcon.Request, resp: falcon.Response, path: str = "") -> None:
        await self._handle(req, resp, path)

    async def on_post(self, req: falcon.Request, resp: falcon.Response, path: str = "") -> None:
        await self._handle(req, resp, path)

    async def on_head(self, req: falcon.Request, resp: falcon.Response, path: str = "") -> None:
        resp.status = falcon.HTTP_204

    async def on_put(self, req: falcon.Request, resp: falcon.Response, path: str = "") -> None:
        resp.set_header("Allow", "GET, POST")
        self._write(resp, [error_item(TrpcError(
            "METHOD_NOT_SUPPORTED", f"Unsupported {req.method}-request to path \"{path}\""), path or None, False)],
            batch=False)

    on_patch = on_delete = on_put

    async def not_found(self, req: falcon.Request, resp: falcon.Response, **params: str) -> None:
        """Sink for /api/trpc/... paths no route matches (a slash inside): NOT_FOUND, still tRPC's."""
        path = req.path[len("/api/trpc/"):]
        self._write(resp, [error_item(TrpcError("NOT_FOUND", f'No procedure found on path "{path}"'),
                                      path, False)], batch=False)

    async def _handle(self, req: falcon.Request, resp: falcon.Response, path: str) -> None:
        resp.set_header("Vary", "trpc-accept, accept")
        auth.cors(req, resp, self.origins)
        resp.set_header("Cache-Control", "no-store")  # a session's data, never for shared caches
        batch = req.get_param("batch") == "1"
        stream = _accepts_jsonl(req)
        paths = path.split(",") if batch else [path]
        if len(paths) > self.services.config.trpc_max_batch:  # before any statement: one error
            limit = self.services.config.trpc_max_batch
            error = TrpcError("BAD_REQUEST", f"Batch call exceeds maximum size ({limit} calls, TRPC_MAX_BATCH)")
            self._write(resp, [error_item(error, None, False)], batch=False)
            return
        context = _Session(self.services, req, several=len(paths) > 1)
        # Credentials before the body: a POST without a live session reads nothing (each call
        # then answers UNAUTHORIZED); a GET carries its input in the URL.
        reads = req.method != "POST" or await context.known()
        raw, parse_error = await self._raw_input(req) if reads else (MISSING, None)
        superjson = False
        calls = [_Call(i, p) for i, p in enumerate(paths)]
        try:
            superjson = self._assign_inputs(calls, raw, parse_error, batch)
            self._check_request(req, calls, batch, stream)
        except TrpcError as error:  # the request as a whole: one error, no path (as tRPC answers it)
            self._write(resp, [error_item(error, None, superjson)], batch=False)
            return
        if len(calls) == 1:  # most calls: no task to schedule for a gather of one
            outcomes = [await self._run(req, resp, calls[0], context)]
        else:
            outcomes = await asyncio.gather(*(self._run(req, resp, call, context) for call in calls))
        streaming = stream and batch
        wrap = superjson and not streaming  # a stream line is serialized as a whole instead
        items = [result_item(data, wrap) if error is None else error_item(error, call.path, wrap)
                 for call, (data, error) in zip(calls, outcomes)]
        if streaming:
            resp.status = falcon.HTTP_200
            resp.content_type = falcon.MEDIA_JSON  # as @trpc/server answers JSONL by default
            resp.data = stream_head(items, superjson)
        else:
            self._write(resp, items, batch)

    async def _raw_input(self, req: falcon.Request) -> tuple[Any, TrpcError | None]:
        """The input (or MISSING), read with the core's cap and checks (app/validation.py); a
        body is read only for a live session."""
        try:
            if req.method == "GET":
                text = req.get_param("input")
                if not text:
                    return MISSING, None
                return validation.parse_json(text.encode("utf-8", "surrogatepass")), None
            raw = await validation.read_body(req, self.services.config.max_body_bytes)
            return (validation.parse_json(raw) if raw else MISSING), None
        except errors.ApiError as exc:
            code = {413: "PAYLOAD_TOO_LARGE"}.get(exc.status_code, "BAD_REQUEST")
            message = "Input is not valid JSON" if exc.code == "MALFORMED_JSON" else exc.message
            extra = ({"issues": [{"path": [d["field"]], "message": d["message"]} for d in exc.details]}
                     if exc.code == "VALIDATION_ERROR" else None)
            return MISSING, TrpcError(code, message if code != "PAYLOAD_TOO_LARGE" else "Request body too large", extra)

    @staticmethod
    def _assign_inputs(calls: list[_Call], raw: Any, parse_error: TrpcError | None, batch: bool) -> bool:
        """Hands each call its input (or its input error); True when the client speaks superjson."""
        if parse_error is not None:
            if parse_error.code == "PAYLOAD_TOO_LARGE":
                raise parse_error
            for call in calls:
                call.input_error = parse_error
            return False
        if raw is MISSING:
            return False
        if not batch:
            superjson = is_superjson(raw)
            calls[0].input = from_superjson(raw) if superjson else raw
            return superjson
        if not isinstance(raw, dict):
            for call in calls:
                call.input_error = TrpcError("BAD_REQUEST", '"input" needs to be an object when doing a batch call')
            return False
        present = [raw[str(c.index)] for c in calls if str(c.index) in raw]
        superjson = bool(present) and all(is_superjson(v) for v in present)
        for call in calls:
            if str(call.index) in raw:
                value = raw[str(call.index)]
                call.input = from_superjson(value) if superjson else value
        return superjson

    @staticmethod
    def _check_request(req: falcon.Request, calls: list[_Call], batch: bool, stream: bool) -> None:
        if req.method == "POST" and not _is_json(req):
            raise TrpcError("UNSUPPORTED_MEDIA_TYPE",
                            f'Unsupported content-type "{req.content_type}"' if req.content_type
                            else "Missing content-type header")
        if stream and not batch:
            raise TrpcError("BAD_REQUEST", "Streaming requests must be batched (you can do a batch of 1)")
        types = sorted({c.procedure.type for c in calls if c.procedure is not None})
        if len(types) > 1:
            raise TrpcError("BAD_REQUEST", f"Cannot mix procedure types in call: {', '.join(types)}")

    async def _run(self, req: falcon.Request, resp: falcon.Response, call: _Call,
                   session: _Session) -> tuple[Any, TrpcError | None]:
        procedure = call.procedure
        identity: Identity | None = None
        data: Any = None
        error: TrpcError | None = None
        try:
            if procedure is None:
                raise TrpcError("NOT_FOUND", f'No procedure found on path "{call.path}"')
            if METHODS[procedure.type] != req.method:
                resp.set_header("Allow", METHODS[procedure.type])
                raise TrpcError("METHOD_NOT_SUPPORTED",
                                f'Unsupported {req.method}-request to {procedure.type} procedure at path "{call.path}"')
            identity = await session.identity()
            if procedure.type == "mutation" and not auth.origin_allowed(req, self.origins):
                raise TrpcError("FORBIDDEN", "Mutations are refused from this origin")
            if call.input_error is not None:
                raise call.input_error
            value = call.input
            if value is MISSING or value is None:
                value = {} if procedure.optional_input else None
            try:
                params = procedure.input.model_validate(value)
            except ValidationError as exc:
                raise _validation_error(exc) from None
            token = auth.cookie_token(req)  # a view is audited per session (router.by_risk_item), by its hash
            data = await procedure.run(Context(self.services, identity, token and auth.token_hash(token)), params)
        except TrpcError as exc:
            error = exc
        except Exception as exc:  # noqa: BLE001 - answered in the envelope, logged with the request id
            error = _unexpected(exc, req, call.path)
        finally:
            if identity is not None:
                session.settled(identity, error)
        return data, error

    @staticmethod
    def _write(resp: falcon.Response, items: list[dict], batch: bool) -> None:
        resp.status = batch_status(items)
        resp.content_type = falcon.MEDIA_JSON
        resp.data = dumps(items if batch else items[0])


class _Session:
    """The request's dashboard session, resolved once however many calls the request holds.

    A POST looks it up first (its body is read only for a live session) and its calls use what
    the lookup found. A query resolves it inside its own statement (one round trip:
    auth.session_identity_in_statement). In a batch of several queries the first call to reach
    the database does so, and its statement hands the claims back (Identity.learns); the other
    calls wait for it and carry those claims. A dead session thus costs one statement, not one
    per call, and a live one no statement more than the calls themselves."""

    def __init__(self, services, req: falcon.Request, several: bool = False) -> None:
        self._lookup = None
        self.services = services
        self.req = req
        self.several = several
        self._learner: Identity | None = None      # the identity of the batch's first call
        self._first: asyncio.Future | None = None  # done when that call has ended
        self._dead = False                         # that call found the session dead

    def _identity(self):
        if self._lookup is None:
            self._lookup = asyncio.ensure_future(auth.session_identity(self.services.db, self.req))
        return self._lookup

    async def identity(self) -> Identity:
        if self._lookup is not None:
            identity = await self._lookup
        elif self._learner is not None:  # a later call of the batch: what the first one found
            await self._first
            identity = await self._after_first()
        else:  # not looked up: the call's statement checks the session
            identity = auth.session_identity_in_statement(self.req)
            if identity is not None and self.several:
                identity.learns = True
                self._learner = identity
                self._first = asyncio.get_running_loop().create_future()
        if identity is None:
            raise TrpcError("UNAUTHORIZED", "A valid dashboard session is required")
        return identity

    async def _after_first(self) -> Identity | None:
        learner = self._learner
        if learner.claims_json is not None:
            return Identity(learner.role, learner.claims_json)
        if self._dead:
            return None
        # The first call ended before its statement did (bad input, another error): look it up, once.
        return await self._identity()

    def settled(self, identity: Identity, error: TrpcError | None) -> None:
        """A call that held `identity` has ended, with `error` or without."""
        if identity is self._learner and not self._first.done():
            self._dead = identity.claims_json is None and error is not None and error.code == "UNAUTHORIZED"
            self._first.set_result(None)

    async def known(self) -> bool:
        """Whether the request carries a live session (the identity is kept for the calls)."""
        return await self._identity() is not None
