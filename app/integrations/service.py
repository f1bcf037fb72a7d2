"""Emissions: claim the key, build the StandardRiskItem, orchestrate, record the outcome.

    execute_emission(services, risk_item_id, provider, event) -> {emissionId, status, externalId, error, ...}

Every route of this surface (and the dashboard's syncBeneficiaries) goes through `run_batch`:
SQL claims the keys (`integrations.begin_*`, one round trip that also returns the
StandardRiskItem: at most one provider call per key at a time, none after SUCCESS), the
orchestrator calls the provider with an Idempotency-Key derived from the key, and
`integrations.record_batch` applies the state machine in one transaction (emission rows, risk
item metadata, chat notices, delayed retries, claims released). The outbox worker sends its
dispatches in batches (POST /api/integrations/dispatch-batch), so that one HTTP hop and two
transactions serve many emissions.
"""
from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import orjson
import structlog

from app.db import PROCESS_NAME, SERVICE
from app.orchestrator.contract import MAPPING_ERROR, PROVIDER_TIMEOUT, OrchestratorResult
from app.orchestrator.model import MappingError, StandardRiskItem

log = structlog.get_logger("app.integrations")

# A claim on a key outlives the provider call's total deadline (HTTP_TOTAL_TIMEOUT, which
# starts when the key is claimed) by this margin, which covers recording the outcome while
# PostgreSQL restarts (RECORD_RETRY_DELAYS): no second caller can take a key in flight.
CLAIM_LEASE_MARGIN_SECONDS = 60
# A restarting database refuses connections, ends sessions (class 57) or drops them mid-call.
DATABASE_AWAY = (OSError, asyncpg.InterfaceError, asyncpg.exceptions.OperatorInterventionError)
RECORD_RETRY_DELAYS = (0.2, 0.5, 1.0, 2.0, 4.0, 8.0)  # seconds; PostgreSQL restarts in a few
CLAIMED_BY = PROCESS_NAME

# Provider calls in flight per process (INTEGRATION_PROVIDER_CONCURRENCY): a few busy
# keep-alive connections serve the sandbox's rate; more only add scheduling work
# (bench/emissions.py: 16 beat 4 with the aiohttp transport).
_provider_slots: asyncio.Semaphore | None = None

# Events of the emissions this service starts itself.
SALES_DISPATCH = "SALES_DISPATCH"      # risk item insert -> /dispatch (package.sales_integration_slug)


def claim_lease_seconds(config) -> int:
    """How long a claim on a key lasts (begin_* lease_seconds)."""
    return int(config.http_total_timeout) + CLAIM_LEASE_MARGIN_SECONDS


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
    raw = await services.db.call(role, claims, function, *args, CLAIMED_BY, claim_lease_seconds(services.config))
    return orjson.loads(raw)


async def run_batch(services, begun: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Call the providers for the claimed keys (concurrently) and record every outcome in one
    SQL call; a key not claimed is answered with what SQL said (SKIPPED, IN_PROGRESS, the
    stored outcome) and a {"refused": ...} element (unknown id) stays as it is. Answers in order."""
    claimed = [b for b in begun if b.get("claimed")]
    recorded: list[dict[str, Any]] = []
    if claimed:
        # The total deadline of each provider call starts now, when its key was just claimed.
        deadline = asyncio.get_running_loop().time() + services.config.http_total_timeout
        results = await asyncio.gather(*(_orchestrate(services, b, deadline) for b in claimed))
        outcomes = [{"riskItemId": b["riskItemId"], "provider": b["provider"], "event": b["event"],
                     "outcome": r.as_json()} for b, r in zip(claimed, results)]
        raw = orjson.dumps(outcomes)
        if b"\\u0000" in raw:  # PostgreSQL's jsonb refuses NUL (22P05): drop it, rarely needed
            raw = orjson.dumps(_without_nul(outcomes))
        raw = await _record(services, raw.decode())
        recorded = orjson.loads(raw)
        for data in recorded:
            log.info("emission", risk_item_id=data["riskItemId"], provider=data["provider"],
                     emission_event=data["event"], status=data["status"], attempts=data["attempts"],
                     code=(data.get("error") or {}).get("code"))
    out, done = [], iter(recorded)
    for b in begun:
        out.append(answer(next(done)) if b.get("claimed") else b if "refused" in b else answer(b))
    return out


async def _record(services, outcomes: str) -> str:
    """integrations.record_batch, tried again while the database restarts: the providers have
    answered, and an outcome dropped here would wait for the claim's lease to be asked again."""
    for delay in (*RECORD_RETRY_DELAYS, None):
        try:
            return await services.db.call(SERVICE, None, "integrations.record_batch", outcomes,
                                          emission_options(services.config))
        except DATABASE_AWAY as exc:
            if delay is None:
                raise
            log.warning("emission_record_retry", error=type(exc).__name__, in_seconds=delay)
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")


def _without_nul(value: Any) -> Any:
    """A copy of a JSON value without NUL characters in its strings and keys."""
    if isinstance(value, str):
        return value.replace("\0", "")
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    return value


async def _orchestrate(services, begun: dict[str, Any], deadline: float) -> OrchestratorResult:
    """The orchestrator's outcome for a claimed key (its StandardRiskItem came with the claim),
    within the total deadline: waiting for a slot, token refreshes and the call itself."""
    try:
        item = StandardRiskItem.from_json(begun["item"])
    except MappingError as exc:
        return OrchestratorResult(status="FAILED", provider=begun["provider"], code=MAPPING_ERROR,
                                  message=str(exc)[:300], retryable=False)
    global _provider_slots
    if _provider_slots is None:
        _provider_slots = asyncio.Semaphore(services.config.integration_provider_concurrency)
    try:
        async with asyncio.timeout_at(deadline):
            async with _provider_slots:
                return await services.orchestrator.orchestrate_insurance_emission(
                    begun["provider"], item, begun["idempotencyKey"], deadline)
    except TimeoutError:
        log.warning("emission_deadline", provider=begun["provider"], risk_item_id=begun["riskItemId"],
                    seconds=services.config.http_total_timeout)
        return OrchestratorResult(
            status="FAILED", provider=begun["provider"], code=PROVIDER_TIMEOUT, retryable=True,
            message=f"{begun['provider']} gave no complete answer within {services.config.http_total_timeout:g} s "
                    "(HTTP_TOTAL_TIMEOUT)")


async def run_claimed(services, begun: dict[str, Any]) -> dict[str, Any]:
    """run_batch for one key."""
    return (await run_batch(services, [begun]))[0]


async def execute_emission(services, risk_item_id: int, provider: str | None, event: str) -> dict[str, Any]:
    """Claim the key, build the StandardRiskItem, orchestrate, record the outcome.

    provider None: the package's slug for the event. Returns {emissionId, status, externalId,
    error, ...}; status is SUCCESS, FAILED, ABANDONED, SKIPPED (no slug) or IN_PROGRESS
    (another call holds the key). An unknown risk item raises the database's PT404."""
    begun = await begin(services, "integrations.begin_emission", risk_item_id, provider, event)
    return await run_claimed(services, begun)
