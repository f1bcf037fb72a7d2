"""What every adapter shares: the adapter base class, HTTP outcome classification, masking.

An adapter (one module per insurer in app/orchestrator/insurers/) declares:
    slug, variants         which provider it is and which product variants it insures
    __init__               the credentials and URLs it reads from `integrations.auth_config`
                           (`setting`, `url_setting`; a bad one raises ProviderNotConfigured)
    access_token           the credential an emission presents (OAuth2: oauth2.OAuth2Adapter)
    emit                   the StandardRiskItem mapped to its request, sent with `post`
    external_id            where its success answer carries the policy (or message) id
    classify               how its error answers classify, when it signals more than the
                           shared rule (`status_error`) knows
and inherits the rest from here: the Idempotency-Key on every call, the total deadline,
capped answers, error classes (contract.py), secrets masked in what is kept and logged.
It is built with the provider's pooled `httpx.AsyncClient`, which the orchestrator owns
(with its connect and read timeouts). `emit()` returns an `EmissionResponse`; it never reads
the database.
"""
from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import functools
import re
import time
from typing import Any, ClassVar

import httpx
import orjson

from app.orchestrator.contract import (
    MALFORMED_RESPONSE,
    PROVIDER_AUTH_FAILED,
    PROVIDER_NOT_CONFIGURED,
    PROVIDER_REJECTED,
    PROVIDER_TIMEOUT,
    PROVIDER_UNAVAILABLE,
    PROVIDER_UNREACHABLE,
    RETRYABLE_STATUSES,
    EmissionError,
    EmissionResponse,
    EmitContext,
)
from app.orchestrator.model import StandardRiskItem

MASK = "***"
DEADLINE_MARGIN_SECONDS = 0.05
# A provider's answer is read up to this size; a bigger one is MALFORMED_RESPONSE (a success
# we cannot store) or an error explained by its status alone.
MAX_ANSWER_BYTES = 1024 * 1024
# Provider text in an error message: the operator's view (error_history) has room for more.
REASON_CHARS = 300
# C0 controls and DEL: a NUL fails PostgreSQL's text and jsonb, the others garble logs and chat.
_CONTROL = dict.fromkeys([*range(0x20), 0x7F])
_SECRET_KEY = re.compile(
    r"secret|password|passwd|authorization|credential|api[-_]?key|(^|[-_]|access|refresh|id)token$", re.IGNORECASE)


class ProviderNotConfigured(Exception):
    """No integrations row for the slug, or an auth_config the adapter cannot use."""

    code = PROVIDER_NOT_CONFIGURED


class ProviderCallFailed(Exception):
    """A call made before emit() (a token request) failed; carries the classified error."""

    def __init__(self, error: EmissionError) -> None:
        super().__init__(error.message)
        self.error = error


@functools.lru_cache(maxsize=4096)
def _secret_key(key: str) -> bool:
    return _SECRET_KEY.search(key) is not None


def mask(value: Any) -> Any:
    """A copy of `value` with every secret-looking key's value replaced by ***."""
    if isinstance(value, dict):
        return {k: (MASK if _secret_key(str(k)) else mask(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v) for v in value]
    return value


def clean_text(value: str, limit: int) -> str:
    """Provider text fit to store and show: control characters (NUL included) removed, cut."""
    return value[:limit * 2].translate(_CONTROL)[:limit]


# Retry-After is clamped again to INTEGRATION_RETRY_CAP_SECONDS; this bound only keeps the
# number finite and small enough for any arithmetic on the way.
RETRY_AFTER_MAX = 10 ** 9


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds in [0, RETRY_AFTER_MAX]: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(min(int(value[:12]) if len(value) <= 12 else RETRY_AFTER_MAX, RETRY_AFTER_MAX))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError, IndexError):
        return None
    if when is None:
        return None
    try:
        return min(max(0.0, when.timestamp() - time.time()), float(RETRY_AFTER_MAX))
    except (OverflowError, OSError, ValueError):
        return None


async def send_capped(http: httpx.AsyncClient, request: httpx.Request) -> tuple[httpx.Response, bool]:
    """Sends `request` and reads at most MAX_ANSWER_BYTES of the answer; returns the response
    (its content the part read) and whether the answer was bigger."""
    response = await http.send(request, stream=True)
    length = response.headers.get("Content-Length", "")
    if length.isascii() and length.isdigit() and int(length) <= MAX_ANSWER_BYTES:
        try:  # the common case, exactly what a plain post() does
            await response.aread()
        finally:
            await response.aclose()
        return response, False
    chunks, size, too_big = [], 0, False
    try:
        async for chunk in response.aiter_raw():
            size += len(chunk)
            if size > MAX_ANSWER_BYTES:
                too_big = True
                break
            chunks.append(chunk)
    finally:
        await response.aclose()
    return httpx.Response(response.status_code, headers=response.headers, content=b"".join(chunks),
                          request=request), too_big


def transport_error(exc: httpx.HTTPError, provider: str) -> EmissionError:
    """A connection error or timeout: retryable."""
    if isinstance(exc, httpx.TimeoutException):
        return EmissionError(PROVIDER_TIMEOUT, f"{provider} did not answer in time ({type(exc).__name__})", True)
    return EmissionError(PROVIDER_UNREACHABLE, f"{provider} is unreachable ({type(exc).__name__})", True)


def _reason(response: httpx.Response) -> str:
    """The provider's own explanation of an error answer, short and clean."""
    try:
        body = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        return clean_text(response.content[:REASON_CHARS * 4].decode("utf-8", "replace"), REASON_CHARS)
    if isinstance(body, dict):
        for key in ("reason", "message", "error_description", "error"):
            value = body.get(key)
            if isinstance(value, dict):
                value = value.get("message") or value.get("reason")
            if isinstance(value, str):
                return clean_text(value, REASON_CHARS)
    return clean_text(str(body), REASON_CHARS)


def status_error(response: httpx.Response, provider: str) -> EmissionError:
    """A non-2xx answer: 401 auth, 408/425/429/5xx retryable, other 4xx rejected."""
    status = response.status_code
    reason = _reason(response)
    if status == 401:
        return EmissionError(PROVIDER_AUTH_FAILED, f"{provider} refused the credentials: {reason}", False, status)
    if status in RETRYABLE_STATUSES:
        return EmissionError(PROVIDER_UNAVAILABLE, f"{provider} answered {status}: {reason}", True, status,
                             retry_after_seconds(response.headers.get("Retry-After")))
    return EmissionError(PROVIDER_REJECTED, f"{provider} rejected the request ({status}): {reason}", False, status)


def failure(error: EmissionError, request_payload: dict | None = None) -> EmissionResponse:
    return EmissionResponse(success=False, errors=(error,), request_payload=request_payload)


class InsuranceAdapter:
    """Base of the adapters: `emit(item, ctx) -> EmissionResponse`."""

    slug: ClassVar[str]
    variants: ClassVar[tuple[str, ...]]  # the product variants it can issue (model.VARIANTS)

    def __init__(self, auth_config: dict[str, Any], http: httpx.AsyncClient,
                 state: dict[str, Any] | None = None) -> None:
        self.http = http
        self.auth_config = auth_config
        # Kept by the orchestrator per provider across config reloads (e.g. a token cache).
        self.state = {} if state is None else state

    def setting(self, key: str, config: dict | None = None) -> str:
        """A required non-empty string of auth_config (or of a sub-object)."""
        value = (self.auth_config if config is None else config).get(key)
        if not isinstance(value, str) or not value.strip():
            raise ProviderNotConfigured(f"{self.slug} auth_config.{key} is missing")
        return value

    def url_setting(self, key: str, config: dict | None = None, path: str = "") -> httpx.URL:
        """A required http(s) URL of auth_config, with `path` appended, parsed once."""
        value = self.setting(key, config).rstrip("/") + path
        try:
            url = httpx.URL(value)
        except httpx.InvalidURL:
            url = None
        if url is None or url.scheme not in ("http", "https") or not url.host:
            raise ProviderNotConfigured(f"{self.slug} auth_config.{key} is not an http(s) URL")
        return url

    async def access_token(self, item: StandardRiskItem, stale: str | None = None) -> str | None:
        """The credential emit() presents; after a 401, `stale` is the one refused (a new one
        is fetched unless someone already did). Raises ProviderCallFailed."""
        return None

    async def emit(self, item: StandardRiskItem, ctx: EmitContext) -> EmissionResponse:
        raise NotImplementedError

    def classify(self, response: httpx.Response) -> EmissionError:
        """A non-2xx answer as an error: the shared rule (401 auth, 408/425/429/5xx retryable,
        other 4xx rejected). An insurer that says more (a revoked token) overrides it."""
        return status_error(response, self.slug)

    def external_id(self, body: dict[str, Any]) -> Any:
        raise NotImplementedError

    def secrets(self, ctx: EmitContext) -> list[str]:
        """Every credential the adapter holds or presents: auth_config values under a
        secret-looking key (as `mask` finds them), and the access token of this call."""
        found = [ctx.access_token] if ctx.access_token else []

        def walk(value: Any, secret: bool) -> None:
            if isinstance(value, dict):
                for key, inner in value.items():
                    walk(inner, secret or _secret_key(str(key)))
            elif isinstance(value, list):
                for inner in value:
                    walk(inner, secret)
            elif secret and isinstance(value, str) and len(value) >= 4:
                found.append(value)
        walk(self.auth_config, False)
        return found

    def scrub(self, error: EmissionError, ctx: EmitContext) -> EmissionError:
        """`error` without any credential the provider echoed back in its text."""
        message = error.message
        for secret in self.secrets(ctx):
            message = message.replace(secret, MASK)
        return error if message == error.message else dataclasses.replace(error, message=message)

    async def post(self, url: str | httpx.URL, body: dict[str, Any], headers: dict[str, str],
                   ctx: EmitContext) -> EmissionResponse:
        """POSTs `body` with the Idempotency-Key and turns the outcome into an EmissionResponse
        (`url` parsed once by the adapter where it can: httpx's URL parsing is not cheap)."""
        headers = {**headers, "Idempotency-Key": ctx.idempotency_key, "Content-Type": "application/json"}
        payload = {"method": "POST", "url": str(url), "headers": mask(headers), "body": mask(body)}
        request = self.http.build_request("POST", url, content=orjson.dumps(body), headers=headers)
        try:
            if ctx.deadline is None:
                response, too_big = await send_capped(self.http, request)
            else:  # a little before the caller's own deadline, so that the payload is kept
                async with asyncio.timeout_at(ctx.deadline - DEADLINE_MARGIN_SECONDS):
                    response, too_big = await send_capped(self.http, request)
        except httpx.HTTPError as exc:
            return failure(transport_error(exc, self.slug), payload)
        except TimeoutError:
            return failure(EmissionError(PROVIDER_TIMEOUT, f"{self.slug} gave no complete answer within the "
                                                           "total deadline (HTTP_TOTAL_TIMEOUT)", True), payload)
        if not response.is_success:
            return failure(self.scrub(self.classify(response), ctx), payload)
        if too_big:
            return failure(EmissionError(
                MALFORMED_RESPONSE, f"{self.slug} answered {response.status_code} with more than "
                                    f"{MAX_ANSWER_BYTES} bytes", True, response.status_code), payload)
        try:
            answer = orjson.loads(response.content)
            external_id = self.external_id(answer)
        except (orjson.JSONDecodeError, TypeError, KeyError, AttributeError, IndexError):
            answer, external_id = None, None
        if not isinstance(external_id, str) or not external_id or external_id != clean_text(external_id, 256):
            return failure(EmissionError(
                MALFORMED_RESPONSE, f"{self.slug} answered {response.status_code} with a body we cannot read",
                True, response.status_code), payload)
        return EmissionResponse(success=True, external_id=external_id, response=answer,
                                request_payload=payload)
