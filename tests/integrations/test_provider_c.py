"""PROVIDER_C end to end: the outbox, the worker draining it, the API's orchestrator, the
sandbox serving PROVIDER_C (its token endpoint and its bind endpoint) from its description.

Its tokens expire in the middle of a batch: one renewal, no failed emission. A token revoked
again after the renewal: a clear code (PROVIDER_TOKEN_REVOKED), retried by the state machine.
"""
from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.fixtures.pipeline import Stack, start_stack, wait_for
from tests.integrations.test_contract_kit_faults import insert
from tests.integrations.test_faults import SETTINGS

IDP = "PROVIDER_C_IDP"


@pytest.fixture(scope="module")
def cstack(admin) -> Iterator[Stack]:
    with start_stack(**SETTINGS) as started, started.worker("--concurrency", "8"):
        yield started


def stats(stack: Stack) -> dict:
    return httpx.get(f"{stack.sandbox}/_sandbox/stats").json()


def emissions(admin, items: list[dict]) -> list[dict]:
    return admin.execute("SELECT risk_item_id, status, attempts, external_id, error_history "
                         "FROM insurance.integration_emissions WHERE risk_item_id = ANY(%s) "
                         "AND event = 'SALES_DISPATCH'", ([i["id"] for i in items],)).fetchall()


def settled(admin, items: list[dict], timeout: float = 60) -> list[dict]:
    return wait_for(lambda: (rows := emissions(admin, items)) and len(rows) == len(items)
                    and all(r["status"] != "FAILED" for r in rows) and rows, timeout, f"{len(items)} final emissions")


def test_travel_and_home_policies_are_issued_through_the_outbox(cstack, admin):
    items = insert(admin, "PROVIDER_C", 3, "travel") + insert(admin, "PROVIDER_C", 3, "home")
    rows = settled(admin, items)
    assert all(r["status"] == "SUCCESS" and r["attempts"] == 1 and r["external_id"].startswith("PC-") for r in rows)
    bound = {r["body"]["reference"]: r["body"]["product"] for r in cstack.requests("PROVIDER_C") if r.get("issued")}
    assert {str(i["uid"]) for i in items} <= set(bound) and {bound[str(i["uid"])] for i in items} == {"TRAVEL", "HOME"}


def test_tokens_that_expire_in_the_middle_of_a_batch_are_renewed_once_and_no_emission_fails(cstack, admin):
    settled(admin, insert(admin, "PROVIDER_C", 1))  # a token in the API's cache
    before = stats(cstack)["tokens"][IDP]
    cstack.fault(provider="PROVIDER_C", delay=0.1, count=60)  # a batch that takes a few seconds
    items = insert(admin, "PROVIDER_C", 60)
    keys = {f"{i['uid']}:PROVIDER_C:SALES_DISPATCH" for i in items}

    def seen() -> list[dict]:
        return [r for r in cstack.requests("PROVIDER_C") if r["idempotencyKey"] in keys]

    wait_for(lambda: len(seen()) >= 15, 30, "the batch under way")
    httpx.delete(f"{cstack.sandbox}/_sandbox/tokens", params={"provider": IDP}).raise_for_status()
    rows = settled(admin, items)
    cstack.clear_faults()
    assert [r["status"] for r in rows] == ["SUCCESS"] * 60 and all(r["attempts"] == 1 for r in rows), \
        "no emission failed"
    assert all(not r["error_history"] for r in rows)
    calls = seen()
    assert any(c["status"] == 401 for c in calls), "the expiry landed in the middle of the batch"
    assert sum(bool(c.get("issued")) for c in calls) == 60, "each item issued once"
    assert stats(cstack)["tokens"][IDP] == before + 1, "one renewal for the whole batch"


def test_a_token_revoked_again_after_its_renewal_fails_with_a_clear_code_and_is_retried(cstack, admin):
    settled(admin, insert(admin, "PROVIDER_C", 1, "home"))
    cstack.fault(provider="PROVIDER_C", revokedToken=True, count=2)
    [item] = insert(admin, "PROVIDER_C", 1, "home")
    [row] = settled(admin, [item])
    assert (row["status"], row["attempts"]) == ("SUCCESS", 2)
    [first] = row["error_history"]
    assert (first["code"], first["retryable"], first["httpStatus"]) == ("PROVIDER_TOKEN_REVOKED", True, 401), first
    key = f"{item['uid']}:PROVIDER_C:SALES_DISPATCH"
    statuses = [r["status"] for r in cstack.requests("PROVIDER_C") if r["idempotencyKey"] == key]
    assert statuses[:2] == [401, 401] and statuses[-1] == 201, statuses
