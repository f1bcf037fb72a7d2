"""The providers the sandbox plays: every described insurer, their identity providers, a chat sink.

One common path serves them all (`Providers.serve`): count the request as in flight for its
Idempotency-Key, record it, apply the provider's next fault if there is one, else answer
as the provider would. An insurer's answer comes from its description (descriptions.py):
its credentials are checked, its request validated against its own JSON Schema, and the
same Idempotency-Key gets the same answer back (`Idempotent-Replayed: true`).
"""
from __future__ import annotations

import asyncio
import base64
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

import falcon
import falcon.asgi
import orjson

from app.sandbox.descriptions import Description, Route, render
from app.sandbox.faults import Fault, Invalid
from app.sandbox.state import Answer, State

# Keys of the ASGI scope through which a provider route tells SandboxASGI what to do with
# its answer (the route itself cannot reach the connection).
IN_FLIGHT = "sandbox.in_flight"   # (provider, Idempotency-Key): counted until answered or hung up
TRICKLE = "sandbox.trickle"       # seconds over which to send the answer, one byte at a time
RESET = "sandbox.reset"           # close the connection without an answer
ISSUED = "sandbox.issued"         # the insurer issued something new for this request

Handle = Callable[[falcon.asgi.Request, bytes, Fault | None], Awaitable[Answer]]


def _error(status: int, error: str, reason: str, headers: dict[str, str] | None = None) -> Answer:
    return status, {"error": error, "reason": reason}, headers or {}


def _json(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise Invalid("body is not valid JSON") from None


def _form(raw: bytes) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(raw.decode("utf-8", "replace")).items()}


def token_record(raw: bytes) -> dict[str, Any]:
    """What the sandbox records of a token request: never the client secret."""
    return {k: v for k, v in _form(raw).items() if k != "client_secret"}


class Providers:
    def __init__(self, state: State, insurers: tuple[Description, ...]) -> None:
        self.state = state
        self.insurers = {d.slug: d for d in insurers}
        # identity provider name -> (clients: id -> secret, token lifetime in seconds)
        self.identity: dict[str, tuple[dict[str, str], float]] = {}
        for d in insurers:
            if d.identity_provider:
                clients, ttl = self.identity.get(d.identity_provider, ({}, 0))
                self.identity[d.identity_provider] = ({**clients, **d.auth["clients"]},
                                                      max(ttl, d.auth.get("tokenTtl", 3600)))

    @property
    def names(self) -> tuple[str, ...]:
        """Every provider a fault may name."""
        return (*self.insurers, *self.identity, "CHAT")

    # -- the common path of every provider call ---------------------------------------------

    async def serve(self, provider: str, req: falcon.asgi.Request, resp: falcon.asgi.Response, handle: Handle,
                    record_body: Callable[[bytes], Any] | None = None) -> None:
        state = self.state
        req.scope[IN_FLIGHT] = state.enter(provider, req.get_header("Idempotency-Key"))
        raw = await req.stream.read()
        state.requests[provider] += 1
        record = {"seq": next(state.seq), "at": time.time(), "provider": provider, "method": req.method,
                  "path": req.path, "idempotencyKey": req.get_header("Idempotency-Key"), "body": None}
        try:
            record["body"] = record_body(raw) if record_body else orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            record["body"] = raw[:2000].decode("utf-8", "replace")
        state.records.append(record)

        status, body, headers = await self._answer(provider, req, raw, handle)
        if status == 0:  # reset: SandboxASGI closes the connection instead
            record["status"] = None
            req.scope[RESET] = True
            return
        record["status"] = status
        if headers.get("Idempotent-Replayed") == "true":
            record["replayed"] = True
        if req.scope.get(ISSUED):
            record["issued"] = True  # a new policy or message, whether or not its answer arrives
        resp.status = status
        for name, value in headers.items():
            resp.set_header(name, value)
        if isinstance(body, bytes):
            resp.data = body
            resp.content_type = headers.get("Content-Type", falcon.MEDIA_JSON)
        elif isinstance(body, str):
            resp.text = body
            resp.content_type = falcon.MEDIA_TEXT
        else:
            resp.data = orjson.dumps(body)
            resp.content_type = falcon.MEDIA_JSON

    async def _answer(self, provider: str, req, raw: bytes, handle: Handle) -> Answer:
        fault = self.state.take_fault(provider)
        if fault is None or fault.expires_in:
            return await handle(req, raw, fault)
        if fault.delay:
            await asyncio.sleep(fault.delay)   # slow, then a normal answer
        elif fault.timeout:
            await asyncio.sleep(fault.timeout)  # longer than any sane client waits
            return _error(504, "gateway_timeout", "injected timeout")
        elif fault.reset:
            return 0, b"", {}
        elif fault.trickle:
            req.scope[TRICKLE] = fault.trickle
        elif fault.body is not None:
            headers = {"Content-Type": "text/html; charset=utf-8"}
            if fault.retry_after is not None:
                headers["Retry-After"] = str(fault.retry_after)
            return fault.status, fault.body, headers
        elif fault.malformed:
            return 200, b'{"policyNumber": "PA-', {}
        elif fault.expired_token or fault.revoked_token:
            insurer = self.insurers.get(provider)
            if insurer is not None and insurer.identity_provider:
                self.state.tokens[insurer.identity_provider].clear()
            name = "expiredToken" if fault.expired_token else "revokedToken"
            return insurer.error(name) if insurer else _error(401, "invalid_token", "the access token expired")
        else:
            headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
            return _error(fault.status, "injected_fault", f"injected {fault.status}", headers)
        return await handle(req, raw, None)

    # -- the insurers ------------------------------------------------------------------------

    def credential(self, insurer: Description, req) -> dict[str, Any] | None:
        """The attributes of the credential presented, or None when the insurer refuses it."""
        auth = insurer.auth
        header = req.get_header(auth.get("header", "Authorization")) or ""
        if auth["type"] == "apiKey":
            return auth["keys"].get(header)
        bearer = header[7:] if header.startswith("Bearer ") else ""
        if auth["type"] == "bearer":
            found = auth["keys"].get(bearer)
            agent = auth.get("agentHeader")
            if found is None or (agent and req.get_header(agent) != found.get("agentCode")):
                return None
            return found
        expires = self.state.tokens[insurer.identity_provider].get(bearer)
        return {} if expires is not None and expires >= time.time() else None

    async def insurer(self, insurer: Description, route: Route, req, raw: bytes, fault: Fault | None) -> Answer:
        credential = self.credential(insurer, req)
        if credential is None:
            return insurer.error("expiredToken" if insurer.identity_provider else "unauthorized")
        try:
            body = _json(raw)
            route.check(body, credential)
        except Invalid as exc:
            return insurer.error("invalidRequest", reason=str(exc))
        key = req.get_header("Idempotency-Key")
        if not key:
            return insurer.error("missingIdempotencyKey")
        issued = self.state.issued[insurer.slug]
        answer = issued.get(key)
        if answer is not None:
            _, stored, headers = answer
            return 200, stored, {**headers, "Idempotent-Replayed": "true"}
        req.scope[ISSUED] = True
        values = {"body": body, "credential": credential, "seq": self.state.next_number(insurer.slug)}
        answer = issued[key] = (route.success["status"], render(route.success["body"], values),
                                dict(route.success.get("headers") or {}))
        return answer

    # -- identity providers (OAuth2 client credentials) --------------------------------------

    async def token(self, name: str, req, raw: bytes, fault: Fault | None) -> Answer:
        clients, ttl = self.identity[name]
        form = _form(raw)
        client_id, secret = form.get("client_id"), form.get("client_secret")
        basic = req.get_header("Authorization") or ""
        if basic.startswith("Basic "):
            try:
                client_id, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
            except ValueError:
                return _error(400, "invalid_request", "malformed Basic credentials")
        if form.get("grant_type") != "client_credentials":
            return _error(400, "unsupported_grant_type", "only client_credentials is supported")
        if client_id not in clients or clients[client_id] != secret:
            return _error(401, "invalid_client", "client authentication failed")
        if fault is not None and fault.expires_in:
            ttl = fault.expires_in
        token = secrets.token_urlsafe(24)
        self.state.tokens[name][token] = time.time() + ttl
        self.state.tokens_issued[name] += 1
        return 200, {"access_token": token, "token_type": "Bearer", "expires_in": ttl}, {"Cache-Control": "no-store"}

    # -- the chat sink (Slack-compatible incoming webhook) -----------------------------------

    async def chat(self, req, raw: bytes, fault: Fault | None) -> Answer:
        try:
            body = _json(raw)
        except Invalid as exc:
            return 400, str(exc), {}
        if not isinstance(body, dict):
            return 400, "invalid_payload", {}
        text, blocks = body.get("text"), body.get("blocks")
        if not (isinstance(text, str) and text.strip()) and not (isinstance(blocks, list) and blocks):
            return 400, "no_text", {}
        return 200, "ok", {}


class ProviderRoute:
    """One provider route: POST goes to `handle` through the common path."""

    def __init__(self, providers: Providers, provider: str, handle: Handle, record_body=None) -> None:
        self.providers, self.provider, self.handle, self.record_body = providers, provider, handle, record_body

    async def on_post(self, req, resp) -> None:
        await self.providers.serve(self.provider, req, resp, self.handle, self.record_body)
