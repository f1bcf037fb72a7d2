"""The Orchestrator: picks the adapter by provider slug, obtains the access token, emits.

    orchestrator = Orchestrator(config, db)
    item = await orchestrator.standard_risk_item(risk_item_id)
    result = await orchestrator.orchestrate_insurance_emission("PROVIDER_A", item, key)

`orchestrate_insurance_emission` never raises: every outcome is an OrchestratorResult,
SUCCESS with the adapter's data or FAILED with a stable code (contract.py). The database is
read only for the item and for the provider's auth_config, which is cached per process for
`config_ttl` seconds so that an emission costs no extra query. One pooled httpx client per
provider lives as long as the orchestrator.
"""
from __future__ import annotations

import asyncio
import dataclasses
import time
import traceback
from collections.abc import Mapping
from typing import Any

import asyncpg
import httpx
import orjson
import structlog

from app.config import Config
from app.db import SERVICE, Database
from app.metrics import observe_provider_call
from app.orchestrator.base import InsuranceAdapter, ProviderCallFailed, ProviderNotConfigured
from app.orchestrator.contract import (
    INTERNAL_ORCHESTRATOR_ERROR,
    MAPPING_ERROR,
    PROVIDER_AUTH_FAILED,
    PROVIDER_NOT_CONFIGURED,
    UNKNOWN_PROVIDER,
    EmissionError,
    EmissionResponse,
    EmitContext,
    OrchestratorResult,
)
from app.orchestrator.model import MappingError, StandardRiskItem
from app.orchestrator.registry import ADAPTERS

log = structlog.get_logger("app.orchestrator")

CONFIG_TTL_SECONDS = 30.0
# After a 401 the credentials are read again unless they were read this recently.
CONFIG_REFRESH_SECONDS = 1.0
_DATABASE_ERRORS = (asyncpg.PostgresError, asyncpg.InterfaceError, OSError)


@dataclasses.dataclass
class _Loaded:
    at: float
    raw: str | None
    adapter: InsuranceAdapter | None = None
    error: str | None = None


def _failed(provider: str, error: EmissionError, request_payload: dict | None = None) -> OrchestratorResult:
    return OrchestratorResult(status="FAILED", provider=provider, code=error.code, message=error.message,
                              retryable=error.retryable, http_status=error.http_status,
                              retry_after=error.retry_after, request_payload=request_payload)


def _where(exc: BaseException) -> str:
    """file:line of the frame that raised, for the log (never the message: it may hold data)."""
    frames = traceback.extract_tb(exc.__traceback__)
    return f"{frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else ""


class Orchestrator:
    def __init__(self, config: Config, db: Database,
                 adapters: Mapping[str, type[InsuranceAdapter]] | None = None,
                 config_ttl: float = CONFIG_TTL_SECONDS) -> None:
        self.config = config
        self.db = db
        self.adapters = dict(ADAPTERS if adapters is None else adapters)
        self.config_ttl = config_ttl
        self._http: dict[str, httpx.AsyncClient] = {}
        self._loaded: dict[str, _Loaded] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._state: dict[str, dict[str, Any]] = {}

    # -- lifecycle -------------------------------------------------------------------------

    async def close(self) -> None:
        clients, self._http = list(self._http.values()), {}
        self._loaded.clear()
        self._state.clear()
        for client in clients:
            await client.aclose()

    def _client(self, slug: str) -> httpx.AsyncClient:
        """The provider's pooled client (keep-alive, explicit timeouts); made at its first use,
        so that an API process that never emits never loads aiohttp (about 7 MB, docs/benchmarks.md "Memory")."""
        client = self._http.get(slug)
        if client is None:
            from app.orchestrator.transport import ProviderTransport
            connect, read = self.config.http_connect_timeout, self.config.http_read_timeout
            client = self._http[slug] = httpx.AsyncClient(
                transport=ProviderTransport(limits=httpx.Limits(max_connections=100, keepalive_expiry=30.0)),
                timeout=httpx.Timeout(connect=connect, read=read, write=read, pool=connect),
                headers={"User-Agent": "insurance-orchestrator/1", "Accept": "application/json"},
                follow_redirects=False)
        return client

    # -- database reads --------------------------------------------------------------------

    async def standard_risk_item(self, risk_item_id: int) -> StandardRiskItem:
        """The item as a StandardRiskItem. Raises the database's PT404 RISK_ITEM_NOT_FOUND, or
        InvalidRiskItem (a MappingError, code MAPPING_ERROR) when the stored item is malformed."""
        raw = await self.db.call(SERVICE, None, "integrations.standard_risk_item", risk_item_id)
        return StandardRiskItem.from_json(orjson.loads(raw))

    async def _adapter(self, slug: str, max_age: float) -> InsuranceAdapter:
        """The adapter built from the provider's auth_config, read at most every `max_age` s."""
        loaded = self._loaded.get(slug)
        if loaded is None or time.monotonic() - loaded.at >= max_age:
            lock = self._locks.setdefault(slug, asyncio.Lock())
            async with lock:  # concurrent callers share one read
                loaded = self._loaded.get(slug)
                if loaded is None or time.monotonic() - loaded.at >= max_age:
                    loaded = self._loaded[slug] = await self._load(slug, loaded)
        if loaded.adapter is None:
            raise ProviderNotConfigured(loaded.error or f"{slug} is not configured")
        return loaded.adapter

    async def _load(self, slug: str, previous: _Loaded | None) -> _Loaded:
        raw = await self.db.call(SERVICE, None, "integrations.provider_config", slug)
        now = time.monotonic()
        if previous is not None and previous.raw == raw and raw is not None:
            return dataclasses.replace(previous, at=now)  # unchanged: keep the adapter
        if raw is None:
            return _Loaded(now, None, error=f"no integrations row for {slug}")
        auth_config = orjson.loads(raw)
        if not isinstance(auth_config, dict):
            return _Loaded(now, raw, error=f"{slug} auth_config is not an object")
        try:
            adapter = self.adapters[slug](auth_config, self._client(slug), self._state.setdefault(slug, {}))
        except ProviderNotConfigured as exc:
            return _Loaded(now, raw, error=str(exc))
        return _Loaded(now, raw, adapter)

    # -- the emission ----------------------------------------------------------------------

    async def orchestrate_insurance_emission(self, provider: str, item: StandardRiskItem,
                                             idempotency_key: str, deadline: float | None = None) -> OrchestratorResult:
        """SUCCESS with the adapter data, or FAILED with a stable code; never raises (but is
        cancelled with its caller). `deadline` (the loop's clock): when the provider call must
        end, PROVIDER_TIMEOUT otherwise. Every log line written meanwhile (here, in the adapter, in the
        transport) carries the item's uid as risk_item_uid: a context variable, bound per emission."""
        slug = provider.upper() if isinstance(provider, str) else ""
        started = time.perf_counter()
        bound = structlog.contextvars.bind_contextvars(risk_item_uid=str(getattr(item, "uid", None)))
        try:
            result = await self._orchestrate(slug, item, idempotency_key, deadline)
        except Exception as exc:  # noqa: BLE001 - a bug or an outage here must not escape to the caller
            log.error("emission_internal_error", provider=slug, error=type(exc).__name__, at=_where(exc))
            result = _failed(slug, EmissionError(
                INTERNAL_ORCHESTRATOR_ERROR, f"the orchestrator failed ({type(exc).__name__})", False))
        finally:
            structlog.contextvars.reset_contextvars(**bound)
        if result.retry_after is not None and not 0 <= result.retry_after <= self.config.integration_retry_cap_seconds:
            result = dataclasses.replace(result, retry_after=min(max(result.retry_after, 0.0),
                                                                 float(self.config.integration_retry_cap_seconds)))
        elapsed = time.perf_counter() - started
        observe_provider_call(slug, "SUCCESS" if result.ok else (result.code or "FAILED"), elapsed)
        elapsed_ms = round(elapsed * 1000, 1)
        if result.ok:
            log.debug("emission_succeeded", provider=slug, risk_item_uid=str(item.uid),
                      external_id=result.external_id, ms=elapsed_ms)
        else:
            log.warning("emission_failed", provider=slug, risk_item_uid=str(getattr(item, "uid", None)), code=result.code,
                        http_status=result.http_status, retryable=result.retryable, ms=elapsed_ms)
        return result

    async def _orchestrate(self, slug: str, item: StandardRiskItem, key: str,
                           deadline: float | None = None) -> OrchestratorResult:
        if slug not in self.adapters:
            return _failed(slug, EmissionError(UNKNOWN_PROVIDER, f"no adapter for provider {slug!r}", False))
        if not isinstance(item, StandardRiskItem):
            raise TypeError("item must be a StandardRiskItem")
        if not isinstance(key, str) or not key:
            raise ValueError("an idempotency key is required")
        try:
            response = await self._emit(slug, item, EmitContext(None, key, deadline))
        except _DATABASE_ERRORS as exc:  # reading the configuration: an outage, worth a retry
            log.error("provider_config_unreadable", provider=slug, error=type(exc).__name__)
            return _failed(slug, EmissionError(
                INTERNAL_ORCHESTRATOR_ERROR, f"the {slug} configuration could not be read", True))
        except ProviderNotConfigured as exc:
            return _failed(slug, EmissionError(PROVIDER_NOT_CONFIGURED, str(exc), False))
        except MappingError as exc:
            return _failed(slug, EmissionError(MAPPING_ERROR, str(exc), False))
        except ProviderCallFailed as exc:
            return _failed(slug, exc.error)
        except Exception as exc:  # noqa: BLE001 - an adapter's defect fails its emission, never the caller
            log.error("adapter_raised", provider=slug, error=type(exc).__name__, at=_where(exc))
            return _failed(slug, EmissionError(
                INTERNAL_ORCHESTRATOR_ERROR, f"the {slug} adapter failed ({type(exc).__name__})", False))
        if response.success:
            return OrchestratorResult(status="SUCCESS", provider=slug, external_id=response.external_id,
                                      response=response.response, request_payload=response.request_payload)
        error = response.errors[0] if response.errors else EmissionError(
            INTERNAL_ORCHESTRATOR_ERROR, f"the {slug} adapter failed without an error", False)
        return _failed(slug, error, response.request_payload)

    async def _emit(self, slug: str, item: StandardRiskItem, ctx: EmitContext) -> EmissionResponse:
        """emit() with the access token; after a 401 (whatever the adapter calls it), fresh
        credentials and one more try."""
        adapter = await self._adapter(slug, self.config_ttl)
        if item.variant not in adapter.variants:
            raise MappingError(f"{slug} does not insure the {item.variant} variant "
                               f"(it insures {', '.join(adapter.variants)})")
        token = await adapter.access_token(item)
        response = await adapter.emit(item, dataclasses.replace(ctx, access_token=token))
        if response.success or not response.errors or not (
                response.errors[0].code == PROVIDER_AUTH_FAILED or response.errors[0].http_status == 401):
            return response
        adapter = await self._adapter(slug, CONFIG_REFRESH_SECONDS)
        token = await adapter.access_token(item, stale=token)
        return await adapter.emit(item, dataclasses.replace(ctx, access_token=token))
