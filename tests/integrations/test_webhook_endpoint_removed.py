"""Issue 41: an endpoint the operator removed never receives another event. Real processes
(sandbox, API, worker), the operator's command line and the partner's API.

A redelivery of a delivery to a removed endpoint answers 409 WEBHOOK_ENDPOINT_REMOVED and queues
nothing (refused rather than re-targeted: a redelivery replays one delivery to the receiver
that missed it; the current endpoints had their own). `channels webhooks --none` ends the
pending row to the old URL (dead, ENDPOINT_REMOVED, audited), and a row an operator puts back
in the queue (`outbox retry`) is ended by the worker's claim, never sent.
"""
from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import orjson
import pytest

from tests.conftest import wait_for
from tests.fixtures.pipeline import Stack, start_stack
from tests.integrations.test_webhooks import (
    SETTINGS,
    cli,
    delivery_rows,
    insert_items,
    make_partner,
    partner_token,
    receiver,
)

# A failed delivery waits a minute for its retry: the operator removes the endpoint meanwhile.
SLOW_RETRIES = {**SETTINGS, "WEBHOOK_RETRY_BASE_SECONDS": "60", "WEBHOOK_RETRY_CAP_SECONDS": "60"}


@pytest.fixture(scope="module")
def stack(admin) -> Iterator[Stack]:
    with start_stack(**SLOW_RETRIES) as started:
        yield started


def row_of(admin, row_id: int) -> dict:
    return admin.execute("SELECT * FROM outbox.http_requests WHERE id = %s", (row_id,)).fetchone()


def test_a_removed_endpoint_gets_no_redelivery_no_retry_and_no_operator_retry(stack, admin, make_package):
    with receiver(answers=[(204, {})] + [(500, {})] * 5) as endpoint, stack.worker():
        partner = make_partner(stack, make_package, [endpoint.url])
        insert_items(admin, partner, partner["package"])
        [delivered] = wait_for(lambda: [r for r in delivery_rows(admin, partner["id"]) if r["delivered_at"]],
                               what="the first event delivered")
        insert_items(admin, partner, partner["package"])  # answered 500: retried in a minute
        [pending] = wait_for(lambda: [r for r in delivery_rows(admin, partner["id"])
                                      if not r["delivered_at"] and r["last_status"] == 500 and not r["leased_by"]],
                             what="a failed delivery waiting for its retry")

        removed = cli(stack.env, "channels", "webhooks", "--id", partner["id"], "--none")
        assert removed.returncode == 0, removed.stderr
        assert orjson.loads(removed.stdout)["endedDeliveries"] == 1
        row = row_of(admin, pending["id"])
        assert row["dead_at"] is not None and row["last_error"].startswith("ENDPOINT_REMOVED")
        audit = admin.execute("SELECT actor FROM insurance.audit_log WHERE action = 'webhooks.endpoint_removed' "
                              "AND targets @> %s::jsonb", (f"[{pending['id']}]",)).fetchone()
        assert audit is not None and audit["actor"].startswith("cli:")

        headers = partner_token(stack, partner, "integrations/v2")
        listed = httpx.get(f"{stack.api}/api/gateway/integrations/v2/webhook-deliveries", params={"limit": 10},
                           headers=headers).json()["data"]["items"]
        assert {d["id"]: d["status"] for d in listed}[pending["id"]] == "dead"
        again = httpx.post(f"{stack.api}/api/gateway/integrations/v2/webhook-deliveries/{delivered['id']}/redeliver",
                           headers=headers)
        assert again.status_code == 409, again.text
        assert again.json()["error"]["code"] == "WEBHOOK_ENDPOINT_REMOVED"
        assert len(delivery_rows(admin, partner["id"])) == 2, "nothing queued"

        # An operator puts the dead row back in the queue: the worker's claim ends it, unsent.
        retried = cli(stack.env, "outbox", "retry", str(pending["id"]))
        assert retried.returncode == 0, retried.stderr
        wait_for(lambda: row_of(admin, pending["id"])["dead_at"], what="the claim ends the row")
        time.sleep(0.5)
        row = row_of(admin, pending["id"])
        assert row["last_error"].startswith("ENDPOINT_REMOVED") and row["delivered_at"] is None
        assert len(endpoint.requests) == 2, "the removed endpoint heard only what was sent before its removal"
