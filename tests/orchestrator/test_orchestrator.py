"""The orchestrator against the provider sandbox, a real process over real HTTP."""
from __future__ import annotations

import asyncio
import uuid

import asyncpg
import orjson
import pytest
import structlog

from app.db import Database
from app.orchestrator import contract
from app.orchestrator.insurers.provider_a import ProviderA
from app.orchestrator.model import InvalidRiskItem, StandardRiskItem
from app.orchestrator.registry import ADAPTERS
from app.orchestrator.service import Orchestrator
from app.sandbox import credentials
from tests.conftest import free_port, unique

VARIANTS = ("travel", "health", "home", "lifestyle")
SECRETS = (credentials.PROVIDER_A_API_KEY, *credentials.PROVIDER_B_AGENTS.values(),
           *credentials.IDP_CLIENTS.values())


def key() -> str:
    return f"test-{uuid.uuid4()}"


@pytest.fixture
def item_of(make_risk_item, make_package, orchestrator):
    """A risk item made in the database and read back as a StandardRiskItem."""
    async def make(variant: str = "travel", package=None, **fields) -> StandardRiskItem:
        fields.setdefault("holder_email", f"{unique('holder')}@example.com")
        row = make_risk_item(package=package or make_package(variants=(variant,)), variant=variant, **fields)
        return await orchestrator.standard_risk_item(row["id"])
    return make


# -- StandardRiskItem ------------------------------------------------------------------------

async def test_standard_risk_item_is_read_from_one_sql_function(admin, make_risk_item, orchestrator):
    row = make_risk_item(variant="home", holder_email="holder@example.com",
                         insured_subject={"name": "Grace Hopper", "address": "1 Main St"},
                         beneficiaries=[{"name": "Child", "email": "child@example.com", "share": 40}])
    admin.execute("INSERT INTO insurance.authorized_claimants (email, risk_item_id) VALUES (%s, %s) "
                  "ON CONFLICT DO NOTHING", ("holder@example.com", row["id"]))
    item = await orchestrator.standard_risk_item(row["id"])
    assert item.uid == str(row["uid"]) and item.package_id == row["package_id"] and item.variant == "home"
    assert item.insured_subject == {"name": "Grace Hopper", "address": "1 Main St"}
    assert [(b.name, b.email, b.is_holder, b.share) for b in item.beneficiaries] == [
        ("Holder", "holder@example.com", True, 60.0), ("Child", "child@example.com", False, 40.0)]
    assert item.authorized_claimants == ("holder@example.com",)
    assert item.policy.variant_name == "Home" and item.policy.premium == 19.9
    assert item.package_uid and item.holder.email == "holder@example.com"


async def test_an_unknown_risk_item_is_a_typed_not_found(orchestrator):
    with pytest.raises(asyncpg.PostgresError) as caught:
        await orchestrator.standard_risk_item(-1)
    assert caught.value.sqlstate == "PT404" and caught.value.detail == "RISK_ITEM_NOT_FOUND"


@pytest.mark.parametrize("change, message", [
    ({"variant": "boat"}, "variant must be one of"),
    ({"uid": ""}, "uid must be a non-empty string"),
    ({"beneficiaries": [{"name": "X", "isHolder": True}]}, "email is required for a holder"),
    ({"beneficiaries": [{"name": "X", "isHolder": "yes"}]}, "isHolder must be a boolean"),
    ({"package_id": "7"}, "package_id must be an integer"),
])
def test_a_bad_item_is_a_mapping_error(change, message):
    good = {"uid": str(uuid.uuid4()), "package_id": 1, "variant": "travel", "policy_uid": "p-1",
            "insured_subject": {"name": "A"}}
    assert StandardRiskItem.from_json(good).variant == "travel"
    with pytest.raises(InvalidRiskItem, match=message) as caught:
        StandardRiskItem.from_json({**good, **change})
    assert caught.value.code == contract.MAPPING_ERROR


# -- success of every adapter ----------------------------------------------------------------

@pytest.mark.parametrize("variant", VARIANTS)
async def test_provider_a_issues_a_policy_for_each_variant(variant, item_of, orchestrator, sbx):
    item = await item_of(variant, insured_subject={"name": "Ada", "birthDate": "1990-01-02",
                                                   "departureDate": "2027-01-01", "returnDate": "2027-01-09"})
    k = key()
    result = await orchestrator.orchestrate_insurance_emission("provider_a", item, k)
    assert result.status == "SUCCESS", result
    assert result.provider == "PROVIDER_A" and result.external_id.startswith(f"PA-{variant[:3].upper()}-")
    assert result.response["policyNumber"] == result.external_id
    [seen] = sbx.requests("PROVIDER_A", k)
    assert seen["path"] == f"/provider-a/v1/{variant}/policies" and seen["status"] == 201
    assert seen["body"]["externalReference"] == item.uid and variant in seen["body"]
    assert result.request_payload["headers"]["X-Api-Key"] == "***"


@pytest.mark.parametrize("variant", VARIANTS)
async def test_provider_b_maps_beneficiaries_to_its_own_types(variant, item_of, orchestrator, sbx):
    item = await item_of(variant, beneficiaries=[{"name": "Heir", "email": "heir@example.com", "share": 60},
                                                 {"name": "Spouse", "share": 0}])
    k = key()
    result = await orchestrator.orchestrate_insurance_emission("PROVIDER_B", item, k)
    assert result.status == "SUCCESS", result
    assert result.external_id.startswith("PB-SBX-AGENT-1-")  # the default channel
    [seen] = sbx.requests("PROVIDER_B", k)
    body = seen["body"]
    assert body["product"] == variant.upper()
    assert body["policyHolder"]["kind"] == "POLICY_HOLDER" and body["policyHolder"]["email"] == item.holder.email
    assert [(b["kind"], b["fullName"], b["percentage"]) for b in body["beneficiaries"]] == [
        ("BENEFICIARY", "Heir", 60.0)]
    assert [(b["kind"], b["fullName"]) for b in body["additionalInsured"]] == [("ADDITIONAL_INSURED", "Spouse")]


async def test_provider_b_picks_the_channel_configuration_of_the_package(item_of, make_package, configured,
                                                                          sandbox):
    package = make_package(variants=("travel",))
    (agent2, key2) = list(credentials.PROVIDER_B_AGENTS.items())[1]
    config = credentials.auth_configs(sandbox)["PROVIDER_B"]
    config["channels"].append({"packageUid": package["uid"], "agentCode": agent2, "apiKey": key2})
    orch, slug = await configured("PROVIDER_B", config)
    chosen = await orch.orchestrate_insurance_emission(slug, await item_of(package=package), key())
    default = await orch.orchestrate_insurance_emission(slug, await item_of(), key())
    assert chosen.status == "SUCCESS", chosen
    assert chosen.external_id.startswith(f"PB-{agent2}-")
    assert default.external_id.startswith("PB-SBX-AGENT-1-")


async def test_mail_provider_sends_the_welcome_pack_escaped(item_of, orchestrator, sbx):
    item = await item_of("travel", holder_email="welcome@example.com")
    item = StandardRiskItem.from_json({**item.as_json(), "beneficiaries": [
        {"name": "<script>alert(1)</script> Ada", "email": "welcome@example.com", "isHolder": True, "share": 100}]})
    k = key()
    result = await orchestrator.orchestrate_insurance_emission("MAIL_PROVIDER", item, k)
    assert result.status == "SUCCESS", result
    assert result.external_id.startswith("msg_")
    [seen] = sbx.requests("MAIL_PROVIDER", k)
    body = seen["body"]
    assert body["to"] == [{"email": "welcome@example.com", "name": "<script>alert(1)</script> Ada"}]
    assert "&lt;script&gt;alert(1)&lt;/script&gt; Ada" in body["html"] and "<script>" not in body["html"]
    assert "Dear <script>alert(1)</script> Ada," in body["text"]  # text is not HTML: not escaped
    assert item.policy_uid in body["subject"] and item.uid in body["text"]


# -- failures: code and retryable flag -------------------------------------------------------

@pytest.mark.parametrize("fault, code, retryable, status", [
    ({"status": 503, "count": 1}, contract.PROVIDER_UNAVAILABLE, True, 503),
    ({"status": 502}, contract.PROVIDER_UNAVAILABLE, True, 502),
    ({"status": 408}, contract.PROVIDER_UNAVAILABLE, True, 408),
    ({"status": 422}, contract.PROVIDER_REJECTED, False, 422),
    ({"timeout": 3}, contract.PROVIDER_TIMEOUT, True, None),
    ({"malformed": True}, contract.MALFORMED_RESPONSE, True, 200),
])
async def test_provider_failures_are_classified(fault, code, retryable, status, item_of, orchestrator, sbx):
    item = await item_of("travel")
    sbx.fault(provider="PROVIDER_A", **fault)
    result = await orchestrator.orchestrate_insurance_emission("PROVIDER_A", item, key())
    assert (result.status, result.code, result.retryable, result.http_status) == ("FAILED", code, retryable, status)
    assert result.request_payload["url"].endswith("/v1/travel/policies")


async def test_429_carries_retry_after(item_of, orchestrator, sbx):
    item = await item_of("health")
    sbx.fault(provider="PROVIDER_B", status=429, retryAfter=7)
    result = await orchestrator.orchestrate_insurance_emission("PROVIDER_B", item, key())
    assert (result.code, result.retryable, result.http_status, result.retry_after) == (
        contract.PROVIDER_UNAVAILABLE, True, 429, 7.0)


@pytest.mark.parametrize("retry_after, expected", [
    (10_000_000_000_000, 6 * 3600.0),                    # absurd: clamped to INTEGRATION_RETRY_CAP_SECONDS
    ("Wed, 21 Oct 2099 07:28:00 GMT", 6 * 3600.0),       # an HTTP-date decades away: clamped too
    ("Thu, 01 Jan 1970 00:00:00 GMT", 0.0),              # in the past: no wait
    ("soon", None),                                      # unreadable: ignored
])
async def test_retry_after_is_read_and_clamped_to_the_cap(retry_after, expected, item_of, orchestrator, sbx):
    item = await item_of("travel")
    sbx.fault(provider="PROVIDER_A", status=503, retryAfter=retry_after)
    result = await orchestrator.orchestrate_insurance_emission("PROVIDER_A", item, key())
    assert (result.code, result.retry_after) == (contract.PROVIDER_UNAVAILABLE, expected)


async def test_provider_text_is_cleaned_and_cut(item_of, orchestrator, sbx):
    item = await item_of("travel")
    sbx.fault(provider="PROVIDER_A", status=500, body="<html>\u0000\u0007" + "é" * 5000 + "</html>")
    result = await orchestrator.orchestrate_insurance_emission("PROVIDER_A", item, key())
    assert (result.code, result.http_status, result.retryable) == (contract.PROVIDER_UNAVAILABLE, 500, True)
    assert "\x00" not in result.message and "\x07" not in result.message
    assert "<html>éé" in result.message and len(result.message) < 400


@pytest.mark.parametrize("body", ["<html>not json</html>", "x" * (3 * 1024 * 1024)])
async def test_a_success_we_cannot_read_or_too_big_is_malformed(body, item_of, orchestrator, sbx):
    item = await item_of("travel")
    sbx.fault(provider="PROVIDER_A", status=201, body=body)
    result = await orchestrator.orchestrate_insurance_emission("PROVIDER_A", item, key())
    assert (result.code, result.retryable, result.http_status) == (contract.MALFORMED_RESPONSE, True, 201)
    assert len(result.message) < 300


async def test_a_trickling_answer_ends_at_the_total_deadline(item_of, orchestrator, sbx):
    """Each byte comes well within the read timeout; only the total deadline ends the call."""
    item = await item_of("travel")
    sbx.fault(provider="PROVIDER_A", trickle=5)
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await orchestrator.orchestrate_insurance_emission("PROVIDER_A", item, key(), deadline=started + 1.0)
    assert loop.time() - started < 1.5
    assert (result.code, result.retryable) == (contract.PROVIDER_TIMEOUT, True)
    assert result.request_payload["headers"]["X-Api-Key"] == "***", "the masked request is kept for operators"


async def test_a_connection_reset_is_retryable(item_of, orchestrator, sbx):
    item = await item_of("travel")
    sbx.fault(provider="PROVIDER_A", reset=True)
    result = await orchestrator.orchestrate_insurance_emission("PROVIDER_A", item, key())
    assert (result.code, result.retryable) == (contract.PROVIDER_UNREACHABLE, True)


async def test_a_payload_the_provider_refuses_is_not_retryable(item_of, orchestrator, sbx):
    item = await item_of("travel", insured_subject={"name": "Ada", "email": "not-an-email"})
    result = await orchestrator.orchestrate_insurance_emission("PROVIDER_A", item, key())
    assert (result.code, result.retryable, result.http_status) == (contract.PROVIDER_REJECTED, False, 400)
    assert "insured.email must be email" in result.message  # the insurer's reason


async def test_connection_refused_is_retryable(item_of, configured):
    item = await item_of("travel")
    dead = f"http://127.0.0.1:{free_port()}/provider-a"
    orch, slug = await configured("PROVIDER_A", {"baseUrl": dead, "apiKey": credentials.PROVIDER_A_API_KEY})
    result = await orch.orchestrate_insurance_emission(slug, item, key())
    assert (result.code, result.retryable, result.http_status) == (contract.PROVIDER_UNREACHABLE, True, None)


async def test_an_expired_token_is_refreshed_once(item_of, orchestrator, sbx):
    item = await item_of("lifestyle")
    first = await orchestrator.orchestrate_insurance_emission("MAIL_PROVIDER", item, key())
    assert first.ok, first
    before = sbx.stats()["tokensIssued"]
    sbx.fault(provider="MAIL_PROVIDER", expiredToken=True)
    k = key()
    result = await orchestrator.orchestrate_insurance_emission("MAIL_PROVIDER", item, k)
    assert result.status == "SUCCESS", result
    assert sbx.stats()["tokensIssued"] == before + 1
    assert [r["status"] for r in sbx.requests("MAIL_PROVIDER", k)] == [401, 202]


async def test_credentials_refused_twice_are_an_auth_failure(item_of, configured, sbx, sandbox):
    item = await item_of("travel")
    k = key()
    orch, slug = await configured("PROVIDER_A", {"baseUrl": f"{sandbox}/provider-a", "apiKey": "wrong-key"})
    result = await orch.orchestrate_insurance_emission(slug, item, k)
    assert (result.code, result.retryable, result.http_status) == (contract.PROVIDER_AUTH_FAILED, False, 401)
    assert [r["status"] for r in sbx.requests("PROVIDER_A", k)] == [401, 401]  # one retry, fresh credentials


async def test_identity_provider_refusing_the_client_is_an_auth_failure(item_of, configured, sandbox):
    item = await item_of("travel")
    config = {**credentials.auth_configs(sandbox)["MAIL_PROVIDER"], "clientSecret": "wrong-secret"}
    orch, slug = await configured("MAIL_PROVIDER", config)
    result = await orch.orchestrate_insurance_emission(slug, item, key())
    assert (result.code, result.retryable, result.http_status) == (contract.PROVIDER_AUTH_FAILED, False, 401)


@pytest.mark.parametrize("auth_config", [
    None, {"channels": []}, {"baseUrl": "http://x", "channels": [{"agentCode": "A"}]},
    {"baseUrl": "ftp://x", "channels": [{"default": True, "agentCode": "A", "apiKey": "k"}]}])
async def test_a_missing_or_bad_configuration_is_not_retryable(auth_config, item_of, configured):
    item = await item_of("travel")
    orch, slug = await configured("PROVIDER_B", auth_config)
    result = await orch.orchestrate_insurance_emission(slug, item, key())
    assert (result.status, result.code, result.retryable) == ("FAILED", contract.PROVIDER_NOT_CONFIGURED, False)


async def test_an_unknown_provider_is_a_typed_error(item_of, orchestrator):
    result = await orchestrator.orchestrate_insurance_emission("PROVIDER_Z", await item_of(), key())
    assert (result.status, result.code, result.retryable) == ("FAILED", contract.UNKNOWN_PROVIDER, False)


async def test_an_item_that_cannot_be_mapped_is_not_retryable(item_of, orchestrator, sbx):
    item = await item_of("travel", holder_email=None, insured_subject={"phone": "1"})
    k = key()
    for provider in ("PROVIDER_A", "PROVIDER_B", "MAIL_PROVIDER"):
        result = await orchestrator.orchestrate_insurance_emission(provider, item, k)
        assert (result.code, result.retryable) == (contract.MAPPING_ERROR, False), provider
        assert sbx.requests(provider, k) == []  # nothing was sent


async def test_an_adapter_that_raises_gives_internal_orchestrator_error(fast_config, db, sandbox, item_of):
    class Exploding(ProviderA):
        async def emit(self, item, ctx):
            raise RuntimeError(f"boom with {ctx.access_token}")

    orch = Orchestrator(fast_config, db, adapters={**ADAPTERS, "PROVIDER_A": Exploding})
    try:
        with structlog.testing.capture_logs() as logs:
            result = await orch.orchestrate_insurance_emission("PROVIDER_A", await item_of(), key())
    finally:
        await orch.close()
    assert (result.status, result.code, result.retryable) == ("FAILED", contract.INTERNAL_ORCHESTRATOR_ERROR, False)
    assert credentials.PROVIDER_A_API_KEY not in result.message
    assert credentials.PROVIDER_A_API_KEY not in repr(logs)
    assert any(entry["event"] == "adapter_raised" for entry in logs)


# -- idempotency and tokens ------------------------------------------------------------------

@pytest.mark.parametrize("provider", ["PROVIDER_A", "PROVIDER_B"])
async def test_the_same_idempotency_key_twice_gives_one_policy(provider, item_of, orchestrator, sbx):
    item = await item_of("home")
    before = sbx.stats()["policies"][provider]
    k = key()
    first = await orchestrator.orchestrate_insurance_emission(provider, item, k)
    again = await orchestrator.orchestrate_insurance_emission(provider, item, k)
    assert first.ok and again.ok and first.external_id == again.external_id
    assert sbx.stats()["policies"][provider] == before + 1
    other = await orchestrator.orchestrate_insurance_emission(provider, item, key())
    assert other.external_id != first.external_id
    assert sbx.stats()["policies"][provider] == before + 2


async def test_100_concurrent_mail_emits_fetch_one_token(item_of, orchestrator, sbx):
    item = await item_of("travel")
    before = sbx.stats()["tokensIssued"]
    results = await asyncio.gather(*(
        orchestrator.orchestrate_insurance_emission("MAIL_PROVIDER", item, key()) for _ in range(100)))
    assert [r.status for r in results] == ["SUCCESS"] * 100
    assert len({r.external_id for r in results}) == 100
    assert sbx.stats()["tokensIssued"] == before + 1


async def test_no_secret_in_request_payload_or_logs(item_of, orchestrator, sbx, caplog):
    item = await item_of("travel")
    caplog.set_level("DEBUG")
    results = []
    with structlog.testing.capture_logs() as logs:
        for provider in ("PROVIDER_A", "PROVIDER_B", "MAIL_PROVIDER"):
            results.append(await orchestrator.orchestrate_insurance_emission(provider, item, key()))
        sbx.fault(provider="MAIL_PROVIDER", expiredToken=True)
        results.append(await orchestrator.orchestrate_insurance_emission("MAIL_PROVIDER", item, key()))
        sbx.fault(provider="PROVIDER_B", status=500)
        results.append(await orchestrator.orchestrate_insurance_emission("PROVIDER_B", item, key()))
    assert [r.status for r in results] == ["SUCCESS"] * 4 + ["FAILED"]
    tokens = [c.token for state in orchestrator._state.values() for c in state.values()]
    assert tokens and all(tokens)
    payloads = orjson.dumps([r.as_json() for r in results]).decode()
    written = repr(logs) + caplog.text
    for secret in (*SECRETS, *tokens):
        assert secret not in payloads
        assert secret not in written
    assert all(r.request_payload["headers"].get("Authorization", "***") == "***" for r in results)


async def test_a_database_outage_while_reading_the_configuration_is_retryable(fast_config, item_of):
    item = await item_of("travel")
    down = Database(f"postgresql://insurance_app@127.0.0.1:{free_port()}/insurance", 1, 1)
    await down.open()  # starts anyway, as the app does, with an empty pool
    orch = Orchestrator(fast_config, down)
    try:
        result = await orch.orchestrate_insurance_emission("PROVIDER_A", item, key())
    finally:
        await orch.close()
        await down.close()
    assert (result.status, result.code, result.retryable) == ("FAILED", contract.INTERNAL_ORCHESTRATOR_ERROR, True)
