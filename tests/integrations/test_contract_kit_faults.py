"""The contract kit, end to end: the eight hostile-provider faults (test_faults.py) for every
registered adapter, without being told about it, through the outbox, the worker, the API and
the sandbox serving the insurer from its description.

For each (adapter, fault): three items of the adapter's first variant, the next call to the
insurer faulted. Each ends where the state machine says (the faulted one FAILED with the
fault's code and retryable, then SUCCESS on its retry; the others SUCCESS at once), nothing
is issued twice, one call per idempotency key per attempt (never two at once), and no retry
storm (two calls for the faulted key, the retry after its backoff).
"""
from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import orjson
import pytest

from app.orchestrator.registry import ADAPTERS
from tests.fixtures.pipeline import Stack, start_stack, wait_for
from tests.fixtures.risk_items import sample
from tests.integrations.test_faults import FAULTS, SETTINGS, SETTLE_SECONDS

# The code each fault is documented to end in (docs/architecture.md, "Providers that misbehave").
CODES = {
    "absurd Retry-After": "PROVIDER_UNAVAILABLE",
    "Retry-After as an HTTP-date": "PROVIDER_UNAVAILABLE",
    "raw body with NUL and HTML": "PROVIDER_UNAVAILABLE",
    "megabytes of body": "PROVIDER_UNAVAILABLE",
    "a success that is not JSON": "MALFORMED_RESPONSE",
    "trickle": "PROVIDER_TIMEOUT",
    "reset": "PROVIDER_UNREACHABLE",
    "timeout": "PROVIDER_TIMEOUT",
}
ITEMS = 3


@pytest.fixture(scope="module")
def kstack(admin) -> Iterator[Stack]:
    with start_stack(**SETTINGS) as started, started.worker():
        yield started


def insert(admin, slug: str, count: int, variant: str | None = None) -> list[dict]:
    """`count` items of the adapter's first variant (or `variant`), with a holder, in one
    statement (the dispatch trigger sees them whole)."""
    variant = variant or ADAPTERS[slug].variants[0]
    package = admin.execute("""INSERT INTO insurance.packages (uid, name, sales_integration_slug)
                               VALUES (%s, 'Kit package', %s) RETURNING id""",
                            (f"kit-{uuid.uuid4().hex[:12]}", slug)).fetchone()
    admin.execute("""INSERT INTO insurance.package_variants (package_id, code, name, coverages, premium)
                     VALUES (%s, %s, %s, '[{"code": "BASIC", "limit": 1000}]', 19.9)""",
                  (package["id"], variant, variant.title()))
    subject = sample(variant).insured_subject  # what any variant's mapper may read
    email = subject["email"]
    with admin.transaction():
        items = admin.execute(
            """INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject)
               SELECT %s, %s || '-' || n, %s, %s FROM generate_series(1, %s) n RETURNING id, uid""",
            (package["id"], f"kit-{uuid.uuid4().hex[:8]}", variant, orjson.dumps(subject).decode(), count)).fetchall()
        for item in items:
            admin.execute("""INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
                             VALUES (%s, 'Ada Lovelace', %s, true, 100)""", (item["id"], email))
    return items


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("slug", sorted(ADAPTERS))
def test_each_fault_ends_in_its_documented_state(slug, fault, kstack, admin):
    httpx.post(f"{kstack.sandbox}/_sandbox/reset").raise_for_status()
    kstack.fault(provider=slug, count=1, **FAULTS[fault])
    items = insert(admin, slug, ITEMS)
    ids = [i["id"] for i in items]

    def outcomes() -> list[dict]:
        return admin.execute("SELECT risk_item_id, status, attempts, error_history FROM insurance.integration_emissions "
                             "WHERE risk_item_id = ANY(%s) AND event = 'SALES_DISPATCH'", (ids,)).fetchall()

    rows = wait_for(lambda: (r := outcomes()) and len(r) == ITEMS and all(e["status"] == "SUCCESS" for e in r)
                    and r, 2 * SETTLE_SECONDS, f"{ITEMS} successes, one after a retry")
    [faulted] = [r for r in rows if r["error_history"]]
    assert all(r["attempts"] == 1 for r in rows if r is not faulted) and faulted["attempts"] == 2
    [first] = faulted["error_history"]
    assert (first["code"], first["retryable"]) == (CODES[fault], True), first
    assert "\\u0000" not in orjson.dumps(first).decode() and len(orjson.dumps(first)) < 8192

    calls = httpx.get(f"{kstack.sandbox}/_sandbox/requests", params={"provider": slug, "limit": 1000}).json()["requests"]
    keys = {str(i["uid"]): f"{i['uid']}:{slug}:SALES_DISPATCH" for i in items}
    per_key = {k: [c for c in calls if c["idempotencyKey"] == k] for k in keys.values()}
    faulted_key = keys[next(str(i["uid"]) for i in items if i["id"] == faulted["risk_item_id"])]
    assert {k: len(v) for k, v in per_key.items()} == {k: 2 if k == faulted_key else 1 for k in keys.values()}, \
        "one call per key and attempt: no retry storm"
    assert {k: sum(bool(c.get("issued")) for c in v) for k, v in per_key.items()} == dict.fromkeys(keys.values(), 1), \
        "each item issued once"
    times = [c["at"] for c in per_key[faulted_key]]
    assert times[1] - times[0] >= 0.5, "the retry waited for its backoff"
    stats = httpx.get(f"{kstack.sandbox}/_sandbox/stats").json()
    assert stats["maxInFlightPerKey"][slug] == 1, "never two calls in flight for one key"
