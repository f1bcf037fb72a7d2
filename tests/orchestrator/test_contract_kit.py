"""The contract kit: what every registered adapter does, run for each without being told about it.

Parametrized over the registry (app/orchestrator/insurers/, found by itself), against the real
sandbox serving each insurer from its own description (`<module>.sandbox.json`, data written
from the insurer's side, never read by the adapter): an adapter and its description written
apart must agree over HTTP. The eight hostile-provider faults run through the whole pipeline
in tests/integrations/test_contract_kit_faults.py; tests/orchestrator/test_contract_kit_catches.py
shows the kit failing for an adapter that lost a behaviour.

A new insurer needs nothing here: `python -m app adapters new SLUG` (docs/adapters.md).
"""
from __future__ import annotations

import re
import uuid

import orjson
import pytest
import structlog

from app.orchestrator import contract
from app.orchestrator.model import VARIANTS
from app.orchestrator.registry import ADAPTERS
from app.sandbox.descriptions import descriptions
from tests.fixtures.risk_items import sample

DESCRIBED = {d.slug: d for d in descriptions()}
SLUGS = sorted(ADAPTERS)
EACH_VARIANT = [(slug, variant) for slug in SLUGS for variant in ADAPTERS[slug].variants]
RETRYABLE = (408, 425, 429, 500, 502, 503, 504)
FINAL = (400, 403, 404, 409, 422)


pytestmark = pytest.mark.usefixtures("pointed")


def key() -> str:
    return f"kit-{uuid.uuid4()}"


async def emit(orchestrator, slug: str, variant: str | None = None, k: str | None = None, **kw):
    variant = variant or ADAPTERS[slug].variants[0]
    return await orchestrator.orchestrate_insurance_emission(slug, sample(variant), k or key(), **kw)


# -- what it declares ------------------------------------------------------------------------

@pytest.mark.parametrize("slug", SLUGS)
async def test_it_declares_its_slug_and_variants_and_its_insurer_is_described(slug, orchestrator, sbx):
    adapter = ADAPTERS[slug]
    assert adapter.slug == slug and re.fullmatch(r"[A-Z][A-Z0-9_]{0,63}", slug), "the packages' slug rule"
    assert adapter.variants and set(adapter.variants) <= set(VARIANTS)
    assert slug in DESCRIBED, f"no {slug} description beside its module (<module>.sandbox.json)"
    assert set(DESCRIBED[slug].variants) == set(adapter.variants), "the insurer's routes cover its variants"
    for other in sorted(set(VARIANTS) - set(adapter.variants)):  # a variant it does not insure
        k = key()
        result = await emit(orchestrator, slug, other, k)
        assert (result.code, result.retryable) == (contract.MAPPING_ERROR, False), result
        assert sbx.requests(slug, k) == [], "nothing is sent"


# -- the StandardRiskItem mapping of each variant, against the insurer's description ----------

@pytest.mark.parametrize("slug, variant", EACH_VARIANT)
async def test_each_variant_maps_to_a_request_its_insurer_accepts(slug, variant, orchestrator, sbx):
    k = key()
    result = await emit(orchestrator, slug, variant, k)
    assert result.status == "SUCCESS", result
    assert isinstance(result.external_id, str) and result.external_id
    [seen] = sbx.requests(slug, k)
    assert 200 <= seen["status"] < 300 and seen["idempotencyKey"] == k


# -- idempotency -----------------------------------------------------------------------------

@pytest.mark.parametrize("slug", SLUGS)
async def test_one_idempotency_key_one_issue(slug, orchestrator, sbx):
    k = key()
    first = await emit(orchestrator, slug, k=k)
    again = await emit(orchestrator, slug, k=k)
    assert first.ok and again.ok and first.external_id == again.external_id, (first, again)
    seen = sbx.requests(slug, k)
    assert len(seen) == 2 and [bool(r.get("replayed")) for r in seen] == [False, True], "issued once"
    other = await emit(orchestrator, slug)
    assert other.ok and other.external_id != first.external_id


# -- classification --------------------------------------------------------------------------

@pytest.mark.parametrize("status", RETRYABLE)
@pytest.mark.parametrize("slug", SLUGS)
async def test_408_425_429_and_5xx_are_retryable_and_tried_once(slug, status, orchestrator, sbx):
    sbx.fault(provider=slug, status=status, **({"retryAfter": 7} if status == 429 else {}))
    k = key()
    result = await emit(orchestrator, slug, k=k)
    assert (result.status, result.code, result.retryable, result.http_status) == (
        "FAILED", contract.PROVIDER_UNAVAILABLE, True, status), result
    if status == 429:
        assert result.retry_after == 7.0, "the insurer's Retry-After is kept"
    assert len(sbx.requests(slug, k)) == 1, "no retry of its own: the state machine retries, with backoff"


@pytest.mark.parametrize("status", FINAL)
@pytest.mark.parametrize("slug", SLUGS)
async def test_other_4xx_are_final(slug, status, orchestrator, sbx):
    sbx.fault(provider=slug, status=status)
    k = key()
    result = await emit(orchestrator, slug, k=k)
    assert (result.status, result.code, result.retryable, result.http_status) == (
        "FAILED", contract.PROVIDER_REJECTED, False, status), result
    assert len(sbx.requests(slug, k)) == 1


@pytest.mark.parametrize("slug", SLUGS)
async def test_a_timeout_is_retryable(slug, orchestrator, sbx):
    """The orchestrator's read timeout is 1 s here (fast_config); the insurer takes 3."""
    sbx.fault(provider=slug, timeout=3)
    result = await emit(orchestrator, slug)
    assert (result.status, result.code, result.retryable) == ("FAILED", contract.PROVIDER_TIMEOUT, True), result


@pytest.mark.parametrize("slug", SLUGS)
async def test_a_malformed_answer_is_retryable(slug, orchestrator, sbx):
    sbx.fault(provider=slug, malformed=True)
    result = await emit(orchestrator, slug)
    assert (result.status, result.code, result.retryable) == ("FAILED", contract.MALFORMED_RESPONSE, True), result


@pytest.mark.parametrize("slug", SLUGS)
async def test_an_expired_credential_is_renewed_once_and_the_call_made_again(slug, orchestrator, sbx):
    assert (await emit(orchestrator, slug)).ok
    sbx.fault(provider=slug, expiredToken=True)
    k = key()
    result = await emit(orchestrator, slug, k=k)
    assert result.ok, result
    assert next(r["status"] for r in sbx.requests(slug, k)) == 401 and len(sbx.requests(slug, k)) == 2


# -- credentials -----------------------------------------------------------------------------

@pytest.mark.parametrize("slug", SLUGS)
async def test_credentials_are_absent_from_logs_and_errors(slug, orchestrator, sbx, caplog, sandbox):
    """Whatever the insurer answers (even its error text quoting the credential back), neither
    the stored outcome nor a log line holds a credential: the auth_config's secrets (as the
    insurer's description lists them) and the token or key presented."""
    from app.sandbox.credentials import auth_configs
    adapter = await orchestrator._adapter(slug, 30)
    presented = await adapter.access_token(sample(adapter.variants[0]))
    held = orjson.dumps(auth_configs(sandbox)[slug]).decode()
    secrets = [s for s in (presented, *_described_secrets(slug)) if s and (s == presented or s in held)]
    assert secrets and all(len(s) >= 8 for s in secrets), "credentials long enough to search for"
    caplog.set_level("DEBUG")
    results = []
    with structlog.testing.capture_logs() as logs:
        results.append(await emit(orchestrator, slug))
        sbx.fault(provider=slug, status=500)
        results.append(await emit(orchestrator, slug))
        for secret in secrets:
            sbx.fault(provider=slug, status=400, body=f'{{"error": "bad credential {secret}"}}')
            results.append(await emit(orchestrator, slug))
        sbx.fault(provider=slug, expiredToken=True, count=2)
        results.append(await emit(orchestrator, slug))
    assert results[0].ok and not any(r.ok for r in results[1:-1]), results
    stored = orjson.dumps([r.as_json() for r in results]).decode()
    written = repr(logs) + caplog.text
    for secret in secrets:
        assert secret not in stored, "a credential in a stored outcome"
        assert secret not in written, "a credential in the log"


def _described_secrets(slug: str) -> list[str]:
    auth = DESCRIBED[slug].auth
    if auth["type"] == "oauth2":
        return list(auth["clients"].values())
    return list(auth["keys"])
