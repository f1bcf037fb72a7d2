"""Emissions: claim the key, build the StandardRiskItem, orchestrate, record the outcome.

    execute_emission(services, risk_item_id, provider, event) -> {emissionId, status, externalId, error, ...}

Every route of this surface (and the dashboard's syncBeneficiaries) goes through `run_claimed`:
SQL claims the key (`integrations.begin_*`, one round trip: at most one provider call per key
at a time, none after SUCCESS), the orchestrator calls the provider with an Idempotency-Key
derived from the key, and `integrations.record_emission` applies the state machine in one
transaction (emission row, risk item metadata, chat notice, delayed retry, claim released).
"""
from __future__ import annotations

import os
import socket
from typing import Any

import orjson
import structlog

from app.db import SERVICE
from app.orchestrator.contract import MAPPING_ERROR, OrchestratorResult

log = structlog.get_logger("app.integrations")

# How long a claim on a key lasts: longer than one provider call with its timeouts.
CLAIM_LEASE_SECONDS = 120
CLAIMED_BY = f"{socket.gethostname()}:{os.getpid()}"

# Events of the emissions this service starts itself.
SALES_DISPATCH = "SALES_DISPATCH"      # risk item insert -> /dispatch (package.sales_integration_slug)
POST_SALES = "POST_SALES"              # /post-sales (package.post_sales_integration_slug)


def emission_options(config) -> str:
    """The settings record_emission needs, as JSON (the state machine's only configuration)."""
    return orjson.dumps({
        "maxAttempts": config.integration_max_attempts,
        "retryBaseSeconds": config.integration_retry_base_seconds,
        "retryCapSeconds": config.integration_retry_cap_seconds,
        "chatWebhookUrl": config.chat_webhook_url,
        "claimedBy": CLAIMED_BY,
    }).decode()


def answer(data: dict[str, Any]) -> dict[str, Any]:
    """The documented body of an integration endpoint."""
    return {
        "emissionId": data.get("emissionId"),
        "riskItemId": data.get("riskItemId"),
        "provider": data.get("provider"),
        "event": data.get("event"),
        "status": data.get("status"),
        "externalId": data.get("externalId"),
        "attempts": data.get("attempts"),
        "nextRetryAt": data.get("nextRetryAt"),
        "error": data.get("error"),
    }


async def begin(services, function: str, *args: Any, role: str = SERVICE, claims: str | None = None) -> dict:
    """Claim a key through one of the integrations.begin_* functions."""
    raw = await services.db.call(role, claims, function, *args, CLAIMED_BY, CLAIM_LEASE_SECONDS)
    return orjson.loads(raw)


async def run_claimed(services, begun: dict[str, Any]) -> dict[str, Any]:
    """Call the provider for a claimed key and record the outcome; a key not claimed is
    answered with what SQL said (SKIPPED, IN_PROGRESS or the stored outcome)."""
    if not begun.get("claimed"):
        return answer(begun)
    orchestrator = services.orchestrator
    provider = begun["provider"]
    try:
        item = await orchestrator.standard_risk_item(begun["riskItemId"])
    except Exception as exc:
        if getattr(exc, "code", None) != MAPPING_ERROR:
            raise  # e.g. the database: the claim's lease expires and the caller retries
        result = OrchestratorResult(status="FAILED", provider=provider, code=MAPPING_ERROR,
                                    message=str(exc)[:300], retryable=False)
    else:
        result = await orchestrator.orchestrate_insurance_emission(provider, item, begun["idempotencyKey"])
    recorded = await services.db.call(
        SERVICE, None, "integrations.record_emission", begun["riskItemId"], provider, begun["event"],
        orjson.dumps(result.as_json()).decode(), emission_options(services.config))
    data = orjson.loads(recorded)
    log.info("emission", risk_item_id=begun["riskItemId"], provider=provider, emission_event=begun["event"],
             status=data["status"], attempts=data["attempts"],
             code=(data.get("error") or {}).get("code"))
    return answer(data)


async def execute_emission(services, risk_item_id: int, provider: str | None, event: str) -> dict[str, Any]:
    """Claim the key, build the StandardRiskItem, orchestrate, record the outcome.

    provider None: the package's slug for the event. Returns {emissionId, status, externalId,
    error, ...}; status is SUCCESS, FAILED, ABANDONED, SKIPPED (no slug) or IN_PROGRESS
    (another call holds the key). An unknown risk item raises the database's PT404."""
    begun = await begin(services, "integrations.begin_emission", risk_item_id, provider, event)
    return await run_claimed(services, begun)
