"""The sandbox HTTP app (Falcon ASGI): strict provider doubles, records, injectable faults.

Provider routes (what the adapters call):
    POST /provider-a/v1/{variant}/policies   X-Api-Key             -> 201 {"policyNumber"}
    POST /provider-b/api/v2/emissions        Bearer <agent key>    -> 201 {"emission": {"certificateNumber"}}
    POST /idp/oauth/token                    client credentials    -> 200 {"access_token", "expires_in"}
    POST /mail/v1/messages                   Bearer <idp token>    -> 202 {"messageId"}
    POST /chat/webhook                       Slack-compatible JSON -> 200 "ok"
Every provider call must carry an Idempotency-Key (not the token and chat routes); the same
key gets the same answer (and the same policy number) back.

Control routes (for tests and demos):
    GET    /_sandbox/health
    GET    /_sandbox/requests?provider=PROVIDER_A&limit=100   what was received, newest last
    GET    /_sandbox/stats                distinct policies, messages, tokens, requests per provider,
                                          maxInFlightPerKey (the most concurrent requests seen for
                                          one Idempotency-Key, per provider)
    POST   /_sandbox/faults  {"provider": "PROVIDER_A", "count": 2, "status": 503, "retryAfter": 7}
           retryAfter: seconds or any header text (an HTTP-date); "body": raw text answered with
           the status (default 200; NUL, HTML or megabytes welcome); or one of "timeout": s,
           "delay": s, "malformed": true, "expiredToken": true, "trickle": s (a normal answer,
           one byte at a time over s seconds), "reset": true (the connection closed, no answer)
    GET    /_sandbox/faults;  DELETE /_sandbox/faults (all, or ?provider=...)
    GET    /_sandbox/mail?to=EMAIL        mail caught by the SMTP server (SANDBOX_SMTP_PORT): to,
                                          subject, text, newest last
    POST   /_sandbox/reset                forget requests, faults, policies, messages and webhooks
Partner webhook receivers (a partner's endpoint, for demos and tests):
    POST   /_sandbox/webhooks/{name}      a Standard Webhooks delivery: verified with the name's
                                          secrets (the `standardwebhooks` library), recorded, 204;
                                          400 when the signature does not verify
    PUT    /_sandbox/webhooks/{name}      {"secret": "whsec_..." or [...], "failNext": N,
                                          "failStatus": 500, "redirect": url, "delay": s}: how the
                                          receiver answers (the next N fail, or redirect; delay: slow)
    GET    /_sandbox/webhooks?name=NAME   what arrived, oldest first: headers, raw body, verified
State lives in memory; answers are immediate unless a fault says otherwise. A request stops
counting as in flight when its answer is sent or its client hangs up (`SandboxASGI`).
"""
from __future__ import annotations

import asyncio
import base64
import collections
import dataclasses
import itertools
import secrets
import time
import uuid
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs

import falcon
import falcon.asgi
import orjson

from app.sandbox import credentials, providers
from app.sandbox.mail import MailCatcher
from app.sandbox.providers import Invalid

PROVIDERS = ("PROVIDER_A", "PROVIDER_B", "MAIL_PROVIDER", "IDP", "CHAT")
FAULT_KINDS = ("status", "timeout", "delay", "malformed", "expiredToken", "trickle", "reset")
MAX_FAULT_BODY = 64 * 1024 * 1024
MAX_RECORDS = 50_000

Answer = tuple[int, Any, dict[str, str]]


@dataclasses.dataclass
class Fault:
    provider: str
    count: int
    status: int | None = None
    retry_after: int | str | None = None
    body: bytes | None = None
    timeout: float | None = None
    delay: float | None = None
    trickle: float | None = None
    reset: bool = False
    malformed: bool = False
    expired_token: bool = False

    def as_json(self) -> dict[str, Any]:
        out = {"provider": self.provider, "count": self.count, "status": self.status,
               "retryAfter": self.retry_after, "bodyBytes": None if self.body is None else len(self.body),
               "timeout": self.timeout, "delay": self.delay, "trickle": self.trickle, "reset": self.reset,
               "malformed": self.malformed, "expiredToken": self.expired_token}
        return {k: v for k, v in out.items() if v not in (None, False)}

    @classmethod
    def from_json(cls, data: Any) -> "Fault":
        if not isinstance(data, dict):
            raise Invalid("body must be a JSON object")
        provider = data.get("provider")
        if provider not in PROVIDERS:
            raise Invalid(f"provider must be one of {', '.join(PROVIDERS)}")
        count = data.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise Invalid("count must be an integer >= 1")
        kinds = [k for k in FAULT_KINDS if data.get(k) not in (None, False)]
        if data.get("body") is not None and not kinds:
            kinds = ["status"]  # a raw body alone: answered with 200
            data = {**data, "status": 200}
        if data.get("body") is not None and kinds != ["status"]:
            raise Invalid("body goes with status only")
        if len(kinds) != 1:
            raise Invalid(f"give exactly one of {', '.join(FAULT_KINDS)}")
        fault = cls(provider, count)
        kind = kinds[0]
        value = data[kind]
        if kind == "status":
            low = 200 if data.get("body") is not None else 400
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 599:
                raise Invalid(f"status must be an HTTP status {low}-599")
            fault.status = value
            retry_after = data.get("retryAfter")
            if retry_after is not None:
                if isinstance(retry_after, str):
                    if not 0 < len(retry_after) <= 200 or any(c in retry_after for c in "\r\n\0"):
                        raise Invalid("retryAfter text must be one header line of at most 200 characters")
                elif isinstance(retry_after, bool) or not isinstance(retry_after, int) or retry_after < 0:
                    raise Invalid("retryAfter must be a whole number of seconds or an HTTP-date")
                fault.retry_after = retry_after
            body = data.get("body")
            if body is not None:
                if not isinstance(body, str) or len(body) > MAX_FAULT_BODY:
                    raise Invalid("body must be a string of at most 64 MiB")
                fault.body = body.encode("utf-8", "surrogatepass")
        elif kind in ("timeout", "delay", "trickle"):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 300:
                raise Invalid(f"{kind} must be a number of seconds in (0, 300]")
            setattr(fault, kind, float(value))
        elif value is not True:
            raise Invalid(f"{kind} must be true")
        else:
            setattr(fault, "expired_token" if kind == "expiredToken" else kind, True)
        return fault


# Keys of the ASGI scope through which a provider route tells SandboxASGI what to do with
# its answer (the route itself cannot reach the connection).
IN_FLIGHT = "sandbox.in_flight"   # (provider, Idempotency-Key): counted until answered or hung up
TRICKLE = "sandbox.trickle"       # seconds over which to send the answer, one byte at a time
RESET = "sandbox.reset"           # close the connection without an answer


class State:
    """Everything the sandbox remembers, in memory."""

    def __init__(self) -> None:
        self.seq = itertools.count(1)
        self.tokens: dict[str, float] = {}           # access token -> expiry (epoch seconds)
        self.tokens_issued = 0
        self.reset()

    def reset(self) -> None:
        self.records: collections.deque[dict[str, Any]] = collections.deque(maxlen=MAX_RECORDS)
        self.requests = collections.Counter()
        self.faults: dict[str, collections.deque[Fault]] = collections.defaultdict(collections.deque)
        self.issued: dict[str, dict[str, Answer]] = collections.defaultdict(dict)  # provider -> key -> answer
        self.numbers = collections.Counter()
        self.in_flight: collections.Counter = collections.Counter()   # (provider, key) -> requests now
        self.max_in_flight: collections.Counter = collections.Counter()  # provider -> most for one key

    def enter(self, provider: str, key: str | None) -> tuple[str, str | None]:
        if key:
            self.in_flight[(provider, key)] += 1
            self.max_in_flight[provider] = max(self.max_in_flight[provider], self.in_flight[(provider, key)])
        return provider, key

    def leave(self, entry: tuple[str, str | None]) -> None:
        if entry[1]:
            self.in_flight[entry] -= 1
            if self.in_flight[entry] <= 0:
                del self.in_flight[entry]

    def take_fault(self, provider: str) -> Fault | None:
        queue = self.faults.get(provider)
        if not queue:
            return None
        fault = queue[0]
        fault.count -= 1
        if fault.count <= 0:
            queue.popleft()
        return fault

    def next_number(self, prefix: str) -> int:
        self.numbers[prefix] += 1
        return self.numbers[prefix]


def _error(status: int, error: str, reason: str, headers: dict[str, str] | None = None) -> Answer:
    return status, {"error": error, "reason": reason}, headers or {}


class Sandbox:
    def __init__(self) -> None:
        self.state = State()
        self.webhooks = WebhookReceivers()
        self.mailbox = MailCatcher()

    # -- the common path of every provider call ---------------------------------------------

    async def serve(self, provider: str, req: falcon.asgi.Request, resp: falcon.asgi.Response,
                    handle: Callable[[falcon.asgi.Request, bytes], Awaitable[Answer]],
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

    async def _answer(self, provider: str, req, raw: bytes, handle) -> Answer:
        fault = self.state.take_fault(provider)
        if fault is not None:
            if fault.delay:
                await asyncio.sleep(fault.delay)   # slow, then a normal answer
            elif fault.timeout:
                await asyncio.sleep(fault.timeout)  # longer than any sane client waits
                return _error(504, "gateway_timeout", "injected timeout")
            elif fault.reset:
                return 0, b"", {}
            elif fault.trickle:
                req.scope[TRICKLE] = fault.trickle
                return await handle(req, raw)
            elif fault.body is not None:
                headers = {"Content-Type": "text/html; charset=utf-8"}
                if fault.retry_after is not None:
                    headers["Retry-After"] = str(fault.retry_after)
                return fault.status, fault.body, headers
            elif fault.malformed:
                return 200, b'{"policyNumber": "PA-', {}
            elif fault.expired_token:
                self.state.tokens.clear()
                return _error(401, "invalid_token", "the access token expired",
                              {"WWW-Authenticate": 'Bearer error="invalid_token"'})
            else:
                headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
                return _error(fault.status, "injected_fault", f"injected {fault.status}", headers)
        return await handle(req, raw)

    @staticmethod
    def _json(raw: bytes) -> Any:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise Invalid("body is not valid JSON") from None

    def _issue(self, provider: str, req, raw: bytes, check: Callable[[Any], None],
               issue: Callable[[Any], Answer]) -> Answer:
        """400 for a body `check` refuses; else the answer stored for this Idempotency-Key,
        or a new one issued now from the body."""
        try:
            body = self._json(raw)
            check(body)
        except Invalid as exc:
            return _error(400, "invalid_request", str(exc))
        key = req.get_header("Idempotency-Key")
        if not key:
            return _error(400, "missing_idempotency_key", "the Idempotency-Key header is required")
        issued = self.state.issued[provider]
        answer = issued.get(key)
        if answer is not None:
            status, body, headers = answer
            return 200, body, {**headers, "Idempotent-Replayed": "true"}
        answer = issued[key] = issue(body)
        return answer

    def _bearer(self, req) -> str | None:
        header = req.get_header("Authorization") or ""
        return header[7:] if header.startswith("Bearer ") else None

    # -- the providers -----------------------------------------------------------------------

    async def provider_a(self, req, raw: bytes, variant: str) -> Answer:
        if variant not in providers.A_PRODUCTS:
            return _error(404, "not_found", f"no product line {variant!r}")
        if req.get_header("X-Api-Key") != credentials.PROVIDER_A_API_KEY:
            return _error(401, "invalid_api_key", "the X-Api-Key header is missing or wrong")
        def issue(body: dict) -> Answer:
            number = f"PA-{variant[:3].upper()}-{self.state.next_number('A'):07d}"
            return 201, {"policyNumber": number, "status": "ISSUED", "productCode": body["productCode"],
                         "externalReference": body["externalReference"]}, {}
        return self._issue("PROVIDER_A", req, raw, lambda body: providers.check_provider_a(variant, body), issue)

    async def provider_b(self, req, raw: bytes) -> Answer:
        key = self._bearer(req)
        agent = next((a for a, k in credentials.PROVIDER_B_AGENTS.items() if k == key), None)
        if agent is None or req.get_header("X-Agent-Code") != agent:
            return _error(401, "unauthorized", "unknown agent credentials")
        def issue(body: dict) -> Answer:
            number = f"PB-{agent}-{self.state.next_number('B'):07d}"
            return 201, {"emission": {"id": str(uuid.uuid4()), "certificateNumber": number,
                                      "status": "EMITTED", "externalRef": body["externalRef"]}}, {}
        return self._issue("PROVIDER_B", req, raw, lambda body: providers.check_provider_b(agent, body), issue)

    async def token(self, req, raw: bytes) -> Answer:
        form = {k: v[-1] for k, v in parse_qs(raw.decode("utf-8", "replace")).items()}
        client_id, secret = form.get("client_id"), form.get("client_secret")
        basic = req.get_header("Authorization") or ""
        if basic.startswith("Basic "):
            try:
                client_id, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
            except ValueError:
                return _error(400, "invalid_request", "malformed Basic credentials")
        if form.get("grant_type") != "client_credentials":
            return _error(400, "unsupported_grant_type", "only client_credentials is supported")
        if client_id not in credentials.IDP_CLIENTS or credentials.IDP_CLIENTS[client_id] != secret:
            return _error(401, "invalid_client", "client authentication failed")
        token = secrets.token_urlsafe(24)
        self.state.tokens[token] = time.time() + credentials.TOKEN_TTL_SECONDS
        self.state.tokens_issued += 1
        return 200, {"access_token": token, "token_type": "Bearer",
                     "expires_in": credentials.TOKEN_TTL_SECONDS}, {"Cache-Control": "no-store"}

    async def mail(self, req, raw: bytes) -> Answer:
        token = self._bearer(req)
        expires = self.state.tokens.get(token or "")
        if expires is None or expires < time.time():
            return _error(401, "invalid_token", "the access token is missing, unknown or expired",
                          {"WWW-Authenticate": 'Bearer error="invalid_token"'})
        return self._issue("MAIL_PROVIDER", req, raw, providers.check_mail, lambda body: (
            202, {"messageId": f"msg_{self.state.next_number('M'):07d}", "status": "queued"}, {}))

    async def chat(self, req, raw: bytes) -> Answer:
        try:
            providers.check_chat(self._json(raw))
        except Invalid as exc:
            return 400, str(exc), {}
        return 200, "ok", {}


def _token_record(raw: bytes) -> dict[str, Any]:
    """What the sandbox records of a token request: never the client secret."""
    form = {k: v[-1] for k, v in parse_qs(raw.decode("utf-8", "replace")).items()}
    return {k: v for k, v in form.items() if k != "client_secret"}


class ProviderARoute:
    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    async def on_post(self, req, resp, variant: str) -> None:
        await self.sandbox.serve("PROVIDER_A", req, resp, lambda r, raw: self.sandbox.provider_a(r, raw, variant))


class Route:
    """One provider route: POST goes to `handle` through the common path."""

    def __init__(self, sandbox: Sandbox, provider: str, handle, record_body=None) -> None:
        self.sandbox, self.provider, self.handle, self.record_body = sandbox, provider, handle, record_body

    async def on_post(self, req, resp) -> None:
        await self.sandbox.serve(self.provider, req, resp, self.handle, self.record_body)


class Control:
    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    async def on_get_health(self, req, resp) -> None:
        resp.media = {"status": "ok"}

    async def on_get_requests(self, req, resp) -> None:
        provider = req.get_param("provider")
        limit = req.get_param_as_int("limit", min_value=1) or 1000
        rows = [r for r in self.sandbox.state.records if provider is None or r["provider"] == provider]
        resp.media = {"total": len(rows), "requests": rows[-limit:]}

    async def on_get_stats(self, req, resp) -> None:
        state = self.sandbox.state
        resp.media = {"policies": {p: len(state.issued.get(p, {})) for p in ("PROVIDER_A", "PROVIDER_B")},
                      "messages": len(state.issued.get("MAIL_PROVIDER", {})),
                      "tokensIssued": state.tokens_issued,
                      "requests": {p: state.requests.get(p, 0) for p in PROVIDERS},
                      "maxInFlightPerKey": {p: state.max_in_flight.get(p, 0) for p in PROVIDERS}}

    async def on_get_faults(self, req, resp) -> None:
        resp.media = {"faults": [f.as_json() for q in self.sandbox.state.faults.values() for f in q]}

    async def on_post_faults(self, req, resp) -> None:
        try:
            fault = Fault.from_json(orjson.loads(await req.stream.read() or b"null"))
        except (orjson.JSONDecodeError, Invalid) as exc:
            resp.status = 400
            resp.media = {"error": "invalid_fault",
                          "reason": str(exc) if isinstance(exc, Invalid) else "body is not valid JSON"}
            return
        self.sandbox.state.faults[fault.provider].append(fault)
        resp.status = 201
        resp.media = {"fault": fault.as_json()}

    async def on_delete_faults(self, req, resp) -> None:
        provider = req.get_param("provider")
        faults = self.sandbox.state.faults
        for name in list(faults):
            if provider is None or name == provider:
                faults.pop(name)
        resp.status = 204

    async def on_post_reset(self, req, resp) -> None:
        self.sandbox.state.reset()
        self.sandbox.webhooks.reset()
        self.sandbox.mailbox.messages.clear()
        resp.status = 204

    async def on_get_mail(self, req, resp) -> None:
        messages = self.sandbox.mailbox.received(req.get_param("to"))
        resp.media = {"listening": self.sandbox.mailbox.controller is not None, "total": len(messages),
                      "messages": messages}


class WebhookReceivers:
    """Partner endpoints: what each name was told (secrets, failures) and what arrived."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.settings: dict[str, dict[str, Any]] = {}
        self.received: collections.deque[dict[str, Any]] = collections.deque(maxlen=MAX_RECORDS)
        self.seq = itertools.count(1)

    async def on_put_one(self, req, resp, name: str) -> None:
        from standardwebhooks.webhooks import EmptyWebhookSecretError, Webhook
        try:
            data = orjson.loads(await req.stream.read() or b"{}")
            if not isinstance(data, dict):
                raise Invalid("body must be a JSON object")
            secrets_ = data.get("secret", [])
            secrets_ = [secrets_] if isinstance(secrets_, str) else secrets_
            if not isinstance(secrets_, list) or not all(isinstance(x, str) and x for x in secrets_):
                raise Invalid("secret is a whsec_ string or a list of them")
            fail = data.get("failNext", 0)
            status = data.get("failStatus", 500)
            delay = data.get("delay", 0)
            redirect = data.get("redirect")
            if isinstance(fail, bool) or not isinstance(fail, int) or fail < 0:
                raise Invalid("failNext must be an integer >= 0")
            if isinstance(status, bool) or not isinstance(status, int) or not 300 <= status <= 599:
                raise Invalid("failStatus must be an HTTP status 300-599")
            if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not 0 <= delay <= 300:
                raise Invalid("delay must be a number of seconds in [0, 300]")
            if redirect is not None and not isinstance(redirect, str):
                raise Invalid("redirect must be a URL")
            for secret in secrets_:
                Webhook(secret)
        except (orjson.JSONDecodeError, ValueError, Invalid, EmptyWebhookSecretError) as exc:
            resp.status = 400
            resp.media = {"error": "invalid_receiver", "reason": str(exc) if isinstance(exc, Invalid) else "bad body or secret"}
            return
        self.settings[name] = {"secrets": secrets_, "failNext": fail, "failStatus": status,
                               "redirect": redirect, "delay": float(delay)}
        resp.media = {"name": name, "secrets": len(secrets_), "failNext": fail, "failStatus": status,
                      "redirect": redirect, "delay": delay}

    async def on_post_one(self, req, resp, name: str) -> None:
        from standardwebhooks.webhooks import Webhook, WebhookVerificationError
        raw = await req.stream.read()
        setting = self.settings.get(name, {"secrets": [], "failNext": 0, "failStatus": 500, "redirect": None, "delay": 0})
        headers = {k: req.get_header(k) or "" for k in ("webhook-id", "webhook-timestamp", "webhook-signature")}
        verified = None
        if setting["secrets"]:
            verified = False
            for secret in setting["secrets"]:
                try:
                    Webhook(secret).verify(raw, headers)
                    verified = True
                    break
                except (WebhookVerificationError, ValueError):
                    continue
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = None
        record = {"seq": next(self.seq), "at": time.time(), "name": name, "headers": headers,
                  "raw": raw[:65536].decode("utf-8", "replace"), "body": body, "verified": verified}
        self.received.append(record)
        if setting["delay"]:
            await asyncio.sleep(setting["delay"])
        if setting["redirect"]:
            record["status"] = resp.status = 307
            resp.set_header("Location", setting["redirect"])
        elif setting["failNext"] > 0:
            setting["failNext"] -= 1
            record["status"] = resp.status = setting["failStatus"]
            resp.media = {"error": "injected_failure"}
        elif verified is False:
            record["status"] = resp.status = 400
            resp.media = {"error": "invalid_signature"}
        else:
            record["status"] = resp.status = 204

    async def on_get(self, req, resp) -> None:
        name = req.get_param("name")
        rows = [r for r in self.received if name is None or r["name"] == name]
        resp.media = {"total": len(rows), "webhooks": rows}


class MailLifespan:
    """Starts the mail catcher with the sandbox and stops it with it (port 0: none)."""

    def __init__(self, sandbox: Sandbox, host: str, port: int) -> None:
        self.sandbox, self.host, self.port = sandbox, host, port

    async def process_startup(self, scope, event) -> None:
        if self.port:
            self.sandbox.mailbox.start(self.host, self.port)

    async def process_shutdown(self, scope, event) -> None:
        self.sandbox.mailbox.stop()


class SandboxASGI:
    """The Falcon app behind what a route cannot do itself: close the connection without an
    answer, trickle an answer, and know when the client hung up (a request stops counting as
    in flight then, as it would at a real provider whose client went away)."""

    def __init__(self, app: falcon.asgi.App, state: State) -> None:
        self.app, self.state = app, state

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        hung_up = asyncio.Event()
        watcher: asyncio.Task | None = None

        async def watch() -> None:  # the body is read: the next message is the hang-up
            while (await receive())["type"] != "http.disconnect":
                pass
            hung_up.set()

        async def receive_body():
            nonlocal watcher
            message = await receive()
            if message["type"] == "http.request" and not message.get("more_body") and watcher is None:
                watcher = asyncio.create_task(watch())
            elif message["type"] == "http.disconnect":
                hung_up.set()
            return message

        async def answer(message) -> None:
            if scope.get(RESET):
                return
            if message["type"] == "http.response.body" and scope.get(TRICKLE):
                body = message.get("body", b"")
                pause = scope[TRICKLE] / max(1, len(body))
                for i in range(len(body)):
                    if hung_up.is_set():
                        return
                    await send({"type": "http.response.body", "body": body[i:i + 1], "more_body": True})
                    await asyncio.sleep(pause)
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        app = asyncio.create_task(self.app(scope, receive_body, answer))
        hang_up = asyncio.create_task(hung_up.wait())
        try:
            await asyncio.wait({app, hang_up}, return_when=asyncio.FIRST_COMPLETED)
            if scope.get(IN_FLIGHT):
                self.state.leave(scope.pop(IN_FLIGHT))  # answered, or the client went away
            if scope.get(RESET):
                _abort(send)
                await asyncio.sleep(0.01)  # uvicorn sees the hang-up and sends no 500 of its own
            await app
        finally:
            if scope.get(IN_FLIGHT):
                self.state.leave(scope.pop(IN_FLIGHT))
            for task in (hang_up, watcher):
                if task is not None:
                    task.cancel()


def _abort(send) -> None:
    """Close the client's connection at once, no answer: through uvicorn's transport, which
    its send() is bound to (the sandbox always runs under uvicorn)."""
    transport = getattr(getattr(send, "__self__", None), "transport", None)
    if transport is None:
        raise RuntimeError("reset needs uvicorn's transport")
    transport.abort()


def create_sandbox(smtp_port: int = 0, smtp_host: str = "127.0.0.1") -> SandboxASGI:
    """The sandbox app; with smtp_port, its mail catcher listens there while the app runs."""
    sandbox = Sandbox()
    app = falcon.asgi.App(middleware=[MailLifespan(sandbox, smtp_host, smtp_port)])
    handler = falcon.media.JSONHandler(dumps=orjson.dumps, loads=orjson.loads)
    app.req_options.media_handlers[falcon.MEDIA_JSON] = handler
    app.resp_options.media_handlers[falcon.MEDIA_JSON] = handler
    app.add_route("/provider-a/v1/{variant}/policies", ProviderARoute(sandbox))
    app.add_route("/provider-b/api/v2/emissions", Route(sandbox, "PROVIDER_B", sandbox.provider_b))
    app.add_route("/idp/oauth/token", Route(sandbox, "IDP", sandbox.token, _token_record))
    app.add_route("/mail/v1/messages", Route(sandbox, "MAIL_PROVIDER", sandbox.mail))
    app.add_route("/chat/webhook", Route(sandbox, "CHAT", sandbox.chat))
    app.add_route("/_sandbox/webhooks", sandbox.webhooks)
    app.add_route("/_sandbox/webhooks/{name}", sandbox.webhooks, suffix="one")
    control = Control(sandbox)
    for name in ("health", "requests", "stats", "faults", "reset", "mail"):
        app.add_route(f"/_sandbox/{name}", control, suffix=name)
    return SandboxASGI(app, sandbox.state)
