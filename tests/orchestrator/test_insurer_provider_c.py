"""PROVIDER_C's own tests. The contract kit (tests/orchestrator/test_contract_kit.py) runs this
adapter by itself: faults, classification, idempotency, credentials, each variant's
mapping against its description. Here: what only PROVIDER_C does (its request, its token's
life, a revoked token). End to end through the outbox: tests/integrations/test_provider_c.py."""
from __future__ import annotations

import asyncio
import dataclasses
import uuid

import pytest

from app.orchestrator import contract
from tests.fixtures.risk_items import sample

pytestmark = pytest.mark.usefixtures("pointed")
IDP = "PROVIDER_C_IDP"


def key() -> str:
    return f"test-{uuid.uuid4()}"


def tokens(sbx) -> int:
    return sbx.stats()["tokens"][IDP]


async def test_a_travel_item_becomes_a_trip_and_a_home_item_a_property(orchestrator, sbx):
    travel, home = sample("travel"), sample("home")
    for item in (travel, home):
        k = key()
        result = await orchestrator.orchestrate_insurance_emission("PROVIDER_C", item, k)
        assert result.ok and result.external_id.startswith("PC-"), result
        [seen] = sbx.requests("PROVIDER_C", k)
        body = seen["body"]
        assert (body["reference"], body["product"], body["policyholder"]["email"]) == (
            item.uid, item.variant.upper(), item.holder.email)
        if item is travel:
            assert body["trip"] == {"destination": "Lisbon", "start": "2027-03-01", "end": "2027-03-09",
                                    "travellers": 3} and "property" not in body
        else:
            assert body["property"] == {"address": "12 St James's Square, London", "postalCode": "SW1Y 4JH",
                                        "rebuildValue": 350000} and "trip" not in body


@pytest.mark.parametrize("variant, change, message", [
    ("travel", {"destination": None}, "needs insured_subject.destination"),
    ("travel", {"returnDate": "2027-02-01"}, "returnDate is before departureDate"),
    ("home", {"buildingValue": 0}, "buildingValue must be a positive number"),
])
async def test_an_item_it_cannot_bind_is_a_mapping_error_and_nothing_is_sent(variant, change, message,
                                                                            orchestrator, sbx):
    item = sample(variant)
    item = dataclasses.replace(item, insured_subject={**item.insured_subject, **change})
    k = key()
    result = await orchestrator.orchestrate_insurance_emission("PROVIDER_C", item, k)
    assert (result.code, result.retryable) == (contract.MAPPING_ERROR, False) and message in result.message
    assert sbx.requests("PROVIDER_C", k) == []


async def test_the_token_is_kept_until_shortly_before_it_expires(orchestrator, sbx):
    sbx.fault(provider=IDP, expiresIn=3)  # renewed a tenth of its life early: after 2.7 s
    before = tokens(sbx)
    assert (await orchestrator.orchestrate_insurance_emission("PROVIDER_C", sample("home"), key())).ok
    assert (await orchestrator.orchestrate_insurance_emission("PROVIDER_C", sample("home"), key())).ok
    assert tokens(sbx) == before + 1, "the second emission reused the token"
    await asyncio.sleep(3)
    assert (await orchestrator.orchestrate_insurance_emission("PROVIDER_C", sample("travel"), key())).ok
    assert tokens(sbx) == before + 2, "renewed before the insurer refused it"
    assert all(r["status"] == 201 for r in sbx.requests("PROVIDER_C")[-3:]), "no call was made with a dead token"


async def test_emissions_that_need_a_token_at_once_share_one_token_request(orchestrator, sbx):
    before = tokens(sbx)
    results = await asyncio.gather(*(orchestrator.orchestrate_insurance_emission(
        "PROVIDER_C", sample(("travel", "home")[n % 2]), key()) for n in range(40)))
    assert [r.status for r in results] == ["SUCCESS"] * 40
    assert tokens(sbx) == before + 1


async def test_a_revoked_token_is_renewed_once_and_the_call_made_again(orchestrator, sbx):
    assert (await orchestrator.orchestrate_insurance_emission("PROVIDER_C", sample("travel"), key())).ok
    before = tokens(sbx)
    sbx.fault(provider="PROVIDER_C", revokedToken=True)
    k = key()
    result = await orchestrator.orchestrate_insurance_emission("PROVIDER_C", sample("travel"), k)
    assert result.ok, result
    assert [r["status"] for r in sbx.requests("PROVIDER_C", k)] == [401, 201] and tokens(sbx) == before + 1


async def test_a_token_revoked_again_after_renewal_is_a_clear_retryable_error(orchestrator, sbx):
    item = sample("home")
    assert (await orchestrator.orchestrate_insurance_emission("PROVIDER_C", item, key())).ok
    before = tokens(sbx)
    sbx.fault(provider="PROVIDER_C", revokedToken=True, count=2)
    k = key()
    result = await orchestrator.orchestrate_insurance_emission("PROVIDER_C", item, k)
    assert (result.status, result.code, result.retryable, result.http_status) == (
        "FAILED", contract.PROVIDER_TOKEN_REVOKED, True, 401), result
    assert "revoked" in result.message
    assert [r["status"] for r in sbx.requests("PROVIDER_C", k)] == [401, 401] and tokens(sbx) == before + 1
    again = await orchestrator.orchestrate_insurance_emission("PROVIDER_C", item, k)  # the state machine's retry
    assert again.ok, again


async def test_a_client_the_identity_provider_refuses_is_an_auth_failure(configured, sandbox):
    from app.sandbox.credentials import auth_configs
    config = {**auth_configs(sandbox)["PROVIDER_C"], "clientSecret": "not-the-secret"}
    orch, slug = await configured("PROVIDER_C", config)
    result = await orch.orchestrate_insurance_emission(slug, sample("travel"), key())
    assert (result.code, result.retryable, result.http_status) == (contract.PROVIDER_AUTH_FAILED, False, 401)
    assert "not-the-secret" not in result.message


async def test_a_token_endpoint_that_echoes_the_form_leaks_no_encoding_of_the_secret(configured, sandbox, sbx):
    """Issue 41: only the raw client secret was masked; an identity provider echoing the form put
    it URL-encoded into the emission's error (and from there the back-office and the chat notice).
    The provider's text of a token-endpoint error is no longer kept at all."""
    import base64
    import json
    from urllib.parse import quote, quote_plus

    from app.sandbox.credentials import auth_configs
    secret = "s3cr/t+ké=y&1"
    config = {**auth_configs(sandbox)["PROVIDER_C"], "clientSecret": secret}
    orch, slug = await configured("PROVIDER_C", config)
    form = f"grant_type=client_credentials&client_id={config['clientId']}&client_secret={quote_plus(secret)}"
    sbx.fault(provider=IDP, status=400, count=1, body=json.dumps(
        {"error": "invalid_request", "error_description": f"cannot parse {form}"}))
    result = await orch.orchestrate_insurance_emission(slug, sample("travel"), key())
    assert (result.code, result.http_status) == (contract.PROVIDER_REJECTED, 400), result
    encodings = {secret, quote(secret), quote_plus(secret), quote(secret, safe=""), json.dumps(secret)[1:-1],
                 base64.b64encode(f"{config['clientId']}:{secret}".encode()).decode()}
    assert not [e for e in encodings if e in result.message], result.message
    assert result.message == "identity provider answered the token request with 400"
