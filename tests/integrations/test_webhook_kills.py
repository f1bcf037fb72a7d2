"""A worker killed in the middle of a batch, alone on a stack of its own.

The test lived in test_webhooks.py, whose module-scoped worker keeps running between tests: it
claimed the rows beside the victim, usually first (it LISTENs and was started long before), so
the kill often hit a worker that held nothing and the run depended on timing: under load the
other worker had issued all 100 policies before the first check, and the test failed. Here no
other worker runs, the victim is seen holding leases when it dies, and the provider's delay
(0.5 s a call, 8 calls at a time) leaves the batch far from done whatever the load.
"""
from __future__ import annotations

import signal
import socket
from collections.abc import Iterator

import pytest

from tests.fixtures.pipeline import Stack, start_stack, wait_for
from tests.integrations.test_webhooks import SETTINGS, insert_items, make_partner, received, sandbox_hook, verify


@pytest.fixture(scope="module")
def lone_stack(admin) -> Iterator[Stack]:
    """The sandbox and the API, and no worker but the ones the test starts."""
    with start_stack(**SETTINGS) as started:
        yield started


def test_a_worker_killed_mid_batch_sends_each_event_at_least_once_with_one_id(lone_stack, admin, make_package):
    name, url = sandbox_hook(lone_stack)
    partner = make_partner(lone_stack, make_package, [url])
    lone_stack.fault(provider="PROVIDER_A", count=100, delay=0.5)
    items = insert_items(admin, partner, partner["package"], count=100)
    ids = [i["id"] for i in items]
    keys = {f"{i['uid']}:PROVIDER_A:SALES_DISPATCH" for i in items}

    def issued() -> int:
        return len({r["idempotencyKey"] for r in lone_stack.requests("PROVIDER_A")} & keys)

    victim = lone_stack.start_worker("--concurrency", "8")
    try:
        wait_for(lambda: issued() >= 10, what="a part of the batch")
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.wait()
    held = admin.execute("SELECT count(*) AS n FROM outbox.http_requests WHERE leased_by = %s "
                         "AND delivered_at IS NULL AND lease_until > now()",
                         (f"{socket.gethostname()}:{victim.pid}",)).fetchone()["n"]
    assert held > 0, "the victim held no row when it was killed: the test proves nothing"
    assert issued() < 100, "the worker finished before it was killed: the test proves nothing"
    with lone_stack.worker():
        wait_for(lambda: len({d["body"]["data"]["riskItemId"] for d in received(lone_stack, name)}) == 100,
                 timeout=90, what="an event for each of the 100 items")
    lone_stack.clear_faults()
    issued_policies = [r for r in lone_stack.requests("PROVIDER_A")
                       if r["idempotencyKey"] in keys and r["status"] == 201]
    assert len(issued_policies) == 100, "one policy per item"
    by_item: dict[int, set[str]] = {}
    for d in received(lone_stack, name):
        event = verify(partner["webhookSecret"], d)
        assert event["type"] == "emission.succeeded" and event["data"]["riskItemId"] in ids
        by_item.setdefault(event["data"]["riskItemId"], set()).add(d["headers"]["webhook-id"])
    assert len(by_item) == 100 and all(len(v) == 1 for v in by_item.values()), "one webhook-id per event"
    assert admin.execute("SELECT count(*) AS n FROM outbox.http_requests WHERE channel_id = %s",
                         (partner["id"],)).fetchone()["n"] == 100, "one event per emission"
