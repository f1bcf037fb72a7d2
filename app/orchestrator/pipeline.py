"""The emission pipeline: claim the key, build the StandardRiskItem, orchestrate, record the outcome.

    pipeline = Pipeline(config, db, orchestrator)       # once per process, in build_services
    await pipeline.run_batch(await pipeline.begin("schema.begin_fn", ...)) -> one answer per key

Every emission goes through `run_batch`: SQL claims the keys (a `begin_*` function, one round
trip that also returns the StandardRiskItem: at most one provider call per key at a time, none
after SUCCESS), the orchestrator calls the provider with an Idempotency-Key derived from the
key, and `integrations.record_calls` applies the state machine in one transaction (emission
rows, risk item metadata, chat notices, delayed retries, claims released: record_batch) and
notes each provider's calls and answer times of the minute (the back-office's health chart). The integrations
surface, the post-sales surface and the dashboard each start emissions through it; it knows no
HTTP framework and no surface.
"""
from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import orjson
import structlog

from app.db import PROCESS_NAME, SERVICE, Database, Identity
from app.orchestrator.contract import MAPPING_ERROR, PROVIDER_TIMEOUT, OrchestratorResult
from app.orchestrator.model import MappingError, StandardRiskItem
from app.orchestrator.service import Orchestrator

log = structlog.get_logger("app.pipeline")

# A claim on a key outlives the provider call's total deadline (HTTP_TOTAL_TIMEOUT, which
# starts when the key is claimed) by this margin, which covers recording the outcome while
# PostgreSQL restarts (RECORD_RETRY_DELAYS): no second caller can take a key in flight.
CLAIM_LEASE_MARGIN_SECONDS = 60
# A restarting database refuses connections, ends sessions (class 57) or drops them mid-call.
DATABASE_AWAY = (OSError, asyncpg.InterfaceError, asyncpg.exceptions.OperatorInterventionError)
RECORD_RETRY_DELAYS = (0.2, 0.5, 1.0, 2.0, 4.0, 8.0)  # seconds; PostgreSQL restarts in a few
CLAIMED_BY = PROCESS_NAME
SERVICE_IDENTITY = Identity(SERVICE, None)

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
    """The documented body of an emission outcome."""
    return {
        "emissionId": data.get("emissionId"),
        "riskItemId": data.get("riskItemId"),
        "riskItemUid": data.get("riskItemUid"),
        "provider": data.get("provider"),
        "event": data.get("event"),
        "status": data.get("status"),
        "externalId": data.get("externalId"),
        "attempts": data.get("attempts"),
        "nextRetryAt": data.get("nextRetryAt"),
        "error": data.get("error"),
    }


class Pipeline:
    """One per process: the database, the orchestrator, and the provider calls in flight."""

    def __init__(self, config, db: Database, orchestrator: Orchestrator) -> None:
        self.db = db
        self.orchestrator = orchestrator
        self.options = emission_options(config)
        self.total_timeout = config.http_total_timeout
        self.lease_seconds = claim_lease_seconds(config)
        # Provider calls in flight per process (INTEGRATION_PROVIDER_CONCURRENCY): a few busy
        # keep-alive connections serve the sandbox's rate; more only add scheduling work
        # (bench/emissions.py compares them).
        self.slots = asyncio.Semaphore(config.integration_provider_concurrency)

    async def begin(self, function: str, *args: Any, identity: Identity = SERVICE_IDENTITY) -> dict:
        """Claim a key through a begin_* SQL function, as `identity` (a holder's post-sales
        emission, a dashboard session's sync; the service role by default)."""
        raw = await self.db.call_as(identity, function, *args, CLAIMED_BY, self.lease_seconds)
        return orjson.loads(raw)

    async def run_specs(self, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """integrations.begin_batch for these specs, then run_batch: the service role's emissions."""
        begun = orjson.loads(await self.db.call(
            SERVICE, None, "integrations.begin_batch", orjson.dumps(specs).decode(),
            CLAIMED_BY, self.lease_seconds))
        return await self.run_batch(begun)

    async def run_batch(self, begun: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Call the providers for the claimed keys (concurrently) and record every outcome in one
        SQL call; a key not claimed is answered with what SQL said (skipped, IN_PROGRESS, the
        stored outcome) and a {"refused": ...} element (unknown id) stays as it is. Answers in order."""
        claimed = [b for b in begun if b.get("claimed")]
        recorded: list[dict[str, Any]] = []
        if claimed:
            # The total deadline of each provider call starts now, when its key was just claimed.
            deadline = asyncio.get_running_loop().time() + self.total_timeout
            timed = await asyncio.gather(*(self._orchestrate(b, deadline) for b in claimed))
            outcomes = [{"riskItemId": b["riskItemId"], "provider": b["provider"], "event": b["event"],
                         "outcome": r.as_json(), "elapsedMs": ms} for b, (r, ms) in zip(claimed, timed)]
            raw = orjson.dumps(outcomes)
            if b"\\u0000" in raw:  # PostgreSQL's jsonb refuses NUL (22P05): drop it, rarely needed
                raw = orjson.dumps(_without_nul(outcomes))
            recorded = orjson.loads(await self._record(raw.decode(), [b.get("riskItemUid") for b in claimed]))
            uids = {b["riskItemId"]: b.get("riskItemUid") for b in claimed}
            for data in recorded:
                data.setdefault("riskItemUid", uids.get(data["riskItemId"]))
                log.info("emission", risk_item_id=data["riskItemId"], risk_item_uid=data["riskItemUid"],
                         provider=data["provider"],
                         emission_event=data["event"], status=data["status"], attempts=data["attempts"],
                         code=(data.get("error") or {}).get("code"))
        out, done = [], iter(recorded)
        for b in begun:
            out.append(answer(next(done)) if b.get("claimed") else b if "refused" in b else answer(b))
        return out

    async def run_claimed(self, begun: dict[str, Any]) -> dict[str, Any]:
        """run_batch for one key."""
        return (await self.run_batch([begun]))[0]

    async def _record(self, outcomes: str, uids: list) -> str:
        """integrations.record_calls (record_batch with the calls' answer times), tried again while
        the database restarts: the providers have
        answered, and an outcome dropped here would wait for the claim's lease to be asked again."""
        for delay in (*RECORD_RETRY_DELAYS, None):
            try:
                # record_batch, and each provider's calls of the minute for the health chart
                return await self.db.call(SERVICE, None, "integrations.record_calls", outcomes, self.options)
            except DATABASE_AWAY as exc:
                if delay is None:
                    raise
                log.warning("emission_record_retry", error=type(exc).__name__, in_seconds=delay,
                            risk_item_uids=uids)
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def _orchestrate(self, begun: dict[str, Any], deadline: float) -> tuple[OrchestratorResult, int | None]:
        """The orchestrator's outcome for a claimed key (its StandardRiskItem came with the claim),
        within the total deadline: waiting for a slot, token refreshes and the call itself; and
        how long the insurer took to answer (ms, from the slot to the answer; None when no call
        was made)."""
        try:
            item = StandardRiskItem.from_json(begun["item"])
        except MappingError as exc:
            return OrchestratorResult(status="FAILED", provider=begun["provider"], code=MAPPING_ERROR,
                                      message=str(exc)[:300], retryable=False), None
        loop = asyncio.get_running_loop()
        started: float | None = None

        def elapsed_ms() -> int | None:
            return None if started is None else round((loop.time() - started) * 1000)

        try:
            async with asyncio.timeout_at(deadline):
                async with self.slots:
                    started = loop.time()
                    result = await self.orchestrator.orchestrate_insurance_emission(
                        begun["provider"], item, begun["idempotencyKey"], deadline)
                    return result, elapsed_ms()
        except TimeoutError:  # no slot, or no token, in time (the call itself ends a bit earlier)
            log.warning("emission_deadline", provider=begun["provider"], risk_item_id=begun["riskItemId"],
                        seconds=self.total_timeout)
            return OrchestratorResult(
                status="FAILED", provider=begun["provider"], code=PROVIDER_TIMEOUT, retryable=True,
                message=f"{begun['provider']} gave no complete answer within {self.total_timeout:g} s "
                        "(HTTP_TOTAL_TIMEOUT)"), elapsed_ms()


def _without_nul(value: Any) -> Any:
    """A copy of a JSON value without NUL characters in its strings and keys."""
    if isinstance(value, str):
        return value.replace("\0", "")
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    return value
