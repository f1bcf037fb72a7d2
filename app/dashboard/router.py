"""The dashboard's procedures: router `integrationEmissions`.

Each procedure is thin: its input is validated by a pydantic model (BAD_REQUEST otherwise),
then it makes one call, as insurance_dashboard with the session's claims, and answers what
SQL built (passed through as an orjson.Fragment, without a decode/encode round trip).
"""
from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

import orjson
from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, StrictInt, model_validator

from app.db import Identity
from app.validation import MAX_BIGINT

# An emission's state, as every surface names it (dashboard._emission_state): the badge, the
# back-office's counts and filters, this list's input and its answers.
Status = Literal["SUCCESS", "IN_PROGRESS", "ABANDONED", "PAUSED", "RETRY_QUEUED", "FAILED"]


def _within_bigint(digits: str) -> str:
    if int(digits) > MAX_BIGINT:
        raise ValueError(f"must be at most {MAX_BIGINT}")
    return digits


# A positive bigint id: as a JSON integer, or as digits (a cursor; 19 digits may still be
# beyond bigint, which asyncpg would refuse with a 500). Pydantic is loaded with the dashboard
# only, at its first request (app/lazy.py): the other surfaces validate in app/validation.py.
Id = Annotated[StrictInt, Field(gt=0, le=MAX_BIGINT)]
PositiveIdText = Annotated[str, Field(pattern=r"^[1-9][0-9]{0,18}$"), AfterValidator(_within_bigint)]


class Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RiskItemRef(Input):
    """A risk item named by its integer id or by its uid (both: they must name the same item)."""
    riskItemId: Id | None = None
    riskItemUid: uuid.UUID | None = None

    @model_validator(mode="after")
    def _one_of_them(self) -> RiskItemRef:
        if self.riskItemId is None and self.riskItemUid is None:
            raise ValueError("give riskItemId or riskItemUid")
        return self


class ByRiskItemInput(RiskItemRef):
    pass


class ListInput(Input):
    status: Annotated[list[Status], Field(min_length=1, max_length=6)] | Status | None = None
    provider: Annotated[str, Field(pattern=r"^[A-Z][A-Z0-9_]{0,63}$")] | None = None
    event: Annotated[str, Field(pattern=r"^[A-Z][A-Z0-9_]{0,63}$")] | None = None
    since: AwareDatetime | None = None   # updated_at >= since
    until: AwareDatetime | None = None   # updated_at < until
    cursor: PositiveIdText | None = None  # nextCursor of the last page
    limit: Annotated[StrictInt, Field(ge=1, le=100)] = 50


class RetryInput(Input):
    emissionIds: Annotated[list[Id], Field(min_length=1, max_length=100)]


class SyncInput(RiskItemRef):
    pass


@dataclasses.dataclass(frozen=True)
class Context:
    services: Any
    identity: Identity  # the session's: insurance_dashboard with its claims
    session: bytes | None = None  # the session cookie's hash: whose views are audited, whatever the identity's form


@dataclasses.dataclass(frozen=True)
class Procedure:
    type: Literal["query", "mutation"]
    input: type[Input]
    run: Callable[[Context, Any], Awaitable[Any]]
    optional_input: bool = False  # no input at all means the model's defaults


def _sql(value: str | None) -> orjson.Fragment:
    return orjson.Fragment(value if value is not None else "null")


async def by_risk_item(ctx: Context, params: ByRiskItemInput) -> Any:
    # The item's people are shown: the answer and its audit row (via trpc) in one call, once a
    # minute per session and item (app/dashboard/recent_views.py); within it, the answer alone.
    identity, db = ctx.identity, ctx.services.db
    view = (ctx.session, params.riskItemId, params.riskItemUid)
    if ctx.services.recent_views.audited_lately(view):
        return _sql(await db.call_as(identity, "dashboard.risk_item_emissions", params.riskItemId, params.riskItemUid))
    answer = await db.call_as(identity, "dashboard.view_risk_item", params.riskItemId, params.riskItemUid, "trpc")
    ctx.services.recent_views.audited(view)
    return _sql(answer)


async def list_emissions(ctx: Context, params: ListInput) -> Any:
    statuses = [params.status] if isinstance(params.status, str) else params.status
    return _sql(await ctx.services.db.call_as(
        ctx.identity, "dashboard.list_emissions", statuses, params.provider,
        params.event, params.since, params.until, int(params.cursor) if params.cursor else None, params.limit))


async def retry_emissions(ctx: Context, params: RetryInput) -> Any:
    """retryFromBackoffice: the same outbox /retry call as the automatic retry, per emission;
    the SQL function writes the audit row (actor: the session's user)."""
    ids = list(dict.fromkeys(params.emissionIds))
    return _sql(await ctx.services.db.call_as(ctx.identity, "dashboard.retry_emissions", ids, "trpc"))


async def sync_beneficiaries(ctx: Context, params: SyncInput) -> Any:
    """executeEmission of the item's beneficiaries to its package's post-sales provider: the
    key is claimed by the dashboard's own entry point, as the session (audited there)."""
    begun = await ctx.services.pipeline.begin("dashboard.begin_beneficiaries_sync", params.riskItemId,
                                              params.riskItemUid, identity=ctx.identity)
    return await ctx.services.pipeline.run_claimed(begun)


PROCEDURES: dict[str, Procedure] = {
    "integrationEmissions.byRiskItem": Procedure("query", ByRiskItemInput, by_risk_item),
    "integrationEmissions.list": Procedure("query", ListInput, list_emissions, optional_input=True),
    "integrationEmissions.retryEmissions": Procedure("mutation", RetryInput, retry_emissions),
    "integrationEmissions.syncBeneficiaries": Procedure("mutation", SyncInput, sync_beneficiaries),
}
