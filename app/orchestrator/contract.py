"""The orchestrator's contract, shared by the adapters and by the emission pipeline.

    orchestrate_insurance_emission(provider, item, idempotency_key) -> OrchestratorResult

An adapter's `emit(item, EmitContext(access_token=..., idempotency_key=...))` returns an
`EmissionResponse`; the orchestrator turns it (or any exception) into an `OrchestratorResult`
that the SQL emission upsert records. Nothing here touches the database.
"""
from __future__ import annotations

import dataclasses
from typing import Any

# Stable failure codes (OrchestratorResult.code / EmissionError.code).
INTERNAL_ORCHESTRATOR_ERROR = "INTERNAL_ORCHESTRATOR_ERROR"  # the adapter raised
UNKNOWN_PROVIDER = "UNKNOWN_PROVIDER"              # no adapter for the slug (not retryable)
PROVIDER_NOT_CONFIGURED = "PROVIDER_NOT_CONFIGURED"  # no integrations row / bad auth_config (not retryable)
MAPPING_ERROR = "MAPPING_ERROR"                    # the item cannot be mapped (not retryable)
PROVIDER_REJECTED = "PROVIDER_REJECTED"            # 4xx other than the retryable ones (not retryable)
PROVIDER_UNAVAILABLE = "PROVIDER_UNAVAILABLE"      # 5xx, 408, 425, 429 (retryable)
PROVIDER_TIMEOUT = "PROVIDER_TIMEOUT"              # connect or read timeout (retryable)
PROVIDER_UNREACHABLE = "PROVIDER_UNREACHABLE"      # connection refused/reset, DNS (retryable)
PROVIDER_AUTH_FAILED = "PROVIDER_AUTH_FAILED"      # credentials refused after one token refresh
PROVIDER_TOKEN_REVOKED = "PROVIDER_TOKEN_REVOKED"  # the insurer said its token was revoked, again after
                                                   # one refresh (retryable: a later token may be honoured)
MALFORMED_RESPONSE = "MALFORMED_RESPONSE"          # a 2xx we cannot read (retryable: the same key is safe)

RETRYABLE_STATUSES = frozenset({408, 425, 429}) | frozenset(range(500, 600))


@dataclasses.dataclass(frozen=True)
class EmissionError:
    code: str
    message: str
    retryable: bool
    http_status: int | None = None
    retry_after: float | None = None  # seconds, when the provider said Retry-After

    def as_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "retryable": self.retryable,
                "httpStatus": self.http_status, "retryAfter": self.retry_after}


@dataclasses.dataclass(frozen=True)
class EmissionResponse:
    """What an adapter's emit() returns."""

    success: bool
    external_id: str | None = None
    response: dict[str, Any] | None = None            # the provider's answer, stored on success
    errors: tuple[EmissionError, ...] = ()
    request_payload: dict[str, Any] | None = None     # kept for debugging, secrets masked


@dataclasses.dataclass(frozen=True)
class EmitContext:
    access_token: str | None
    idempotency_key: str  # sent as the Idempotency-Key header of every provider call
    deadline: float | None = None  # loop time by which the call must have ended (HTTP_TOTAL_TIMEOUT)


@dataclasses.dataclass(frozen=True)
class OrchestratorResult:
    """SUCCESS with the adapter data, or FAILED with a stable code and message."""

    status: str                      # "SUCCESS" | "FAILED"
    provider: str
    external_id: str | None = None
    response: dict[str, Any] | None = None
    code: str | None = None
    message: str | None = None
    retryable: bool = False
    http_status: int | None = None
    retry_after: float | None = None
    request_payload: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.status == "SUCCESS"

    def as_json(self) -> dict[str, Any]:
        """The outcome as the SQL emission upsert takes it (camelCase keys)."""
        return {"status": self.status, "provider": self.provider, "externalId": self.external_id,
                "response": self.response, "code": self.code, "message": self.message,
                "retryable": self.retryable, "httpStatus": self.http_status,
                "retryAfter": self.retry_after, "requestPayload": self.request_payload}
