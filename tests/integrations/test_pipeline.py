"""End to end: a row inserted with SQL becomes a policy at the sandbox, through the trigger,
the outbox, the worker, the API, the orchestrator and the emission state machine."""
from __future__ import annotations

import concurrent.futures
import re
import signal

import httpx
import orjson

from app.tokens import service_tokens
from tests.conftest import TEST_SECRETS
from tests.fixtures.pipeline import MAX_ATTEMPTS, emission, final, wait_for


def _chat_about(stack, uid) -> list[dict]:
    return [r["body"] for r in stack.requests("CHAT") if str(uid) in orjson.dumps(r["body"]).decode()]


def test_an_inserted_risk_item_is_issued_and_its_metadata_says_so(stack, worker, admin, insert_items):
    [item] = insert_items()
    em = final(admin, item["id"])
    assert em["status"] == "SUCCESS" and em["attempts"] == 1 and em["error_history"] == []
    issued = [r for r in stack.requests("PROVIDER_A") if r["idempotencyKey"] == f"{item['uid']}:PROVIDER_A:SALES_DISPATCH"]
    assert len(issued) == 1 and issued[0]["status"] == 201
    assert em["external_id"] and em["external_id"] == em["response"]["policyNumber"]
    metadata = admin.execute("SELECT metadata FROM insurance.risk_items WHERE id = %s", (item["id"],)).fetchone()["metadata"]
    assert metadata["integration"]["state"] == "SUCCESS"
    assert metadata["integration"]["externalId"] == em["external_id"]
    assert metadata["integration"]["emissionId"] == em["id"]
    assert metadata["integration"]["error"] is None


def test_a_503_fails_with_a_next_retry_and_a_chat_notice_then_the_retry_succeeds(stack, worker, admin, insert_items):
    stack.fault(provider="PROVIDER_A", count=1, status=503)
    [item] = insert_items()
    wait_for(lambda: emission(admin, item["id"]), what="the first outcome")
    notices = wait_for(lambda: _chat_about(stack, item["uid"]), what="a chat notice")
    fields = {f["title"]: f["value"] for f in notices[0]["attachments"][0]["fields"]}
    # The notice as a person reads it in the chat, word for word (only the retry time varies).
    assert re.fullmatch(rf":warning: emission FAILED: PROVIDER_A for risk item {item['uid']} \(PROVIDER_UNAVAILABLE\), "
                        rf"attempt 1 of {MAX_ATTEMPTS}, next retry at \d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\dZ",
                        notices[0]["text"]), notices[0]["text"]
    assert fields["status"] == "FAILED" and fields["errorCode"] == "PROVIDER_UNAVAILABLE" and fields["attempt"] == 1
    assert fields["nextRetryAt"] is not None
    em = final(admin, item["id"])
    assert em["status"] == "SUCCESS" and em["attempts"] == 2 and em["next_retry_at"] is None
    assert [e["httpStatus"] for e in em["error_history"]] == [503]


def test_a_400_is_abandoned_with_a_chat_notice(stack, worker, admin, insert_items):
    stack.fault(provider="PROVIDER_A", count=1, status=400)
    [item] = insert_items()
    em = final(admin, item["id"])
    assert em["status"] == "ABANDONED" and em["attempts"] == 1 and em["next_retry_at"] is None
    assert em["error_history"][0]["httpStatus"] == 400
    notices = wait_for(lambda: _chat_about(stack, item["uid"]), what="a chat notice")
    assert notices[0]["text"] == (f":rotating_light: emission ABANDONED: PROVIDER_A for risk item {item['uid']} "
                                  "(PROVIDER_REJECTED), attempt 1 of " f"{MAX_ATTEMPTS}, no automatic retry")


def test_the_attempt_limit_abandons_the_emission(stack, worker, admin, insert_items):
    stack.fault(provider="PROVIDER_A", count=MAX_ATTEMPTS + 2, status=503)
    [item] = insert_items()
    em = final(admin, item["id"])
    stack.clear_faults()
    assert em["status"] == "ABANDONED" and em["attempts"] == MAX_ATTEMPTS
    assert [e["httpStatus"] for e in em["error_history"]] == [503] * MAX_ATTEMPTS
    assert len(wait_for(lambda: len(_chat_about(stack, item["uid"])) >= MAX_ATTEMPTS and _chat_about(stack, item["uid"]),
                        what="a notice per attempt")) == MAX_ATTEMPTS


def test_an_order_with_policy_created_sends_the_welcome_mail(stack, worker, admin, insert_items):
    [item] = insert_items(sales=None)  # no sales integration: only the order dispatches
    order = admin.execute("INSERT INTO insurance.orders (risk_item_id, event) VALUES (%s, 'POLICY_CREATED') RETURNING id",
                          (item["id"],)).fetchone()
    em = final(admin, item["id"], event="POLICY_CREATED")
    assert em["status"] == "SUCCESS" and em["provider"] == "MAIL_PROVIDER"
    mails = [r for r in stack.requests("MAIL_PROVIDER") if r["idempotencyKey"] == f"{item['uid']}:MAIL_PROVIDER:POLICY_CREATED"]
    assert len(mails) == 1 and mails[0]["status"] == 202

    def delivered() -> int:
        return admin.execute("SELECT count(*) AS n FROM outbox.http_requests WHERE url = '/api/integrations/dispatch-v2' "
                             "AND (body ->> 'order_id')::bigint = %s AND delivered_at IS NOT NULL",
                             (order["id"],)).fetchone()["n"]

    # The worker records its delivery after the API stored the emission (in batches): wait for it.
    wait_for(delivered, 30, "the worker's record of the order's delivery")
    assert delivered() == 1, "the order's own trigger row carried the welcome mail"
    assert emission(admin, item["id"]) is None  # the sales dispatch was skipped: no slug


def test_two_concurrent_dispatches_of_one_key_call_the_provider_once(stack, admin, insert_items, make_package):
    package = make_package(variants=("travel",))  # no slug at insert time: the trigger stays quiet
    [item] = insert_items(package=package)
    admin.execute("UPDATE insurance.packages SET sales_integration_slug = 'PROVIDER_A' WHERE id = %s", (package["id"],))
    stack.fault(provider="PROVIDER_A", count=1, delay=0.5)
    token = service_tokens(TEST_SECRETS["SERVICE_ROLE_SECRET"]).issue("test")

    def dispatch() -> httpx.Response:
        return httpx.post(f"{stack.api}/api/integrations/dispatch", json={"record": {"id": item["id"]}},
                          headers={"Authorization": f"Bearer {token}"}, timeout=10)

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda _: dispatch(), range(2)))
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200, 409], [a.text for a in answers]
    ok = next(a for a in answers if a.status_code == 200).json()["data"]
    assert ok["status"] == "SUCCESS" and ok["externalId"]
    busy = next(a for a in answers if a.status_code == 409).json()["error"]
    assert busy["code"] == "EMISSION_IN_PROGRESS"
    calls = [r for r in stack.requests("PROVIDER_A") if r["idempotencyKey"] == f"{item['uid']}:PROVIDER_A:SALES_DISPATCH"]
    assert len(calls) == 1
    again = dispatch()
    assert again.status_code == 200 and again.json()["data"]["externalId"] == ok["externalId"]
    assert len([r for r in stack.requests("PROVIDER_A") if r["idempotencyKey"] == calls[0]["idempotencyKey"]]) == 1


def test_a_worker_killed_mid_batch_loses_and_doubles_nothing(stack, admin, insert_items):
    stack.fault(provider="PROVIDER_A", count=200, delay=0.05)
    items = insert_items(200)
    ids = [i["id"] for i in items]
    keys = {f"{i['uid']}:PROVIDER_A:SALES_DISPATCH" for i in items}

    def issued() -> int:
        return len({r["idempotencyKey"] for r in stack.requests("PROVIDER_A")} & keys)

    victim = stack.start_worker("--concurrency", "8")
    try:
        wait_for(lambda: issued() >= 20, what="a part of the batch")
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.wait()
    assert issued() < 200, "the worker finished before it was killed: the test proves nothing"
    with stack.worker():
        wait_for(lambda: admin.execute(
            "SELECT count(*) AS n FROM insurance.integration_emissions WHERE risk_item_id = ANY(%s) AND status = 'SUCCESS'",
            (ids,)).fetchone()["n"] == 200, timeout=60, what="200 SUCCESS emissions")
    stack.clear_faults()
    rows = admin.execute("SELECT status, attempts, error_history FROM insurance.integration_emissions "
                         "WHERE risk_item_id = ANY(%s)", (ids,)).fetchall()
    assert len(rows) == 200 and all(r["status"] == "SUCCESS" and r["attempts"] == 1 and r["error_history"] == []
                                    for r in rows)
    assert issued() == 200
    stats = [r for r in stack.requests("PROVIDER_A") if r["idempotencyKey"] in keys and r["status"] == 201]
    assert len(stats) == 200, "the sandbox issued exactly one policy per item"


def test_sigterm_finishes_what_the_worker_holds_and_claims_nothing_more(stack, admin, insert_items):
    stack.fault(provider="PROVIDER_A", count=30, delay=0.3)
    items = insert_items(30)
    ids = [i["id"] for i in items]
    proc = stack.start_worker("--concurrency", "10", "--dispatch-batch", "5")
    try:
        wait_for(lambda: len([r for r in stack.requests("PROVIDER_A")
                              if r["idempotencyKey"] in {f"{i['uid']}:PROVIDER_A:SALES_DISPATCH" for i in items}]) >= 1,
                 what="the first deliveries in flight")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        stack.clear_faults()
    done = admin.execute("SELECT count(*) AS n FROM insurance.integration_emissions WHERE risk_item_id = ANY(%s)",
                         (ids,)).fetchone()["n"]
    assert 0 < done < 30, "the worker stopped claiming but finished what it held"
    leased = admin.execute("""SELECT count(*) AS n FROM outbox.http_requests
                               WHERE url = '/api/integrations/dispatch' AND delivered_at IS NULL
                                 AND lease_until IS NOT NULL AND (body #>> '{record,id}')::bigint = ANY(%s)""",
                           (ids,)).fetchone()["n"]
    assert leased == 0, "nothing stays leased by a worker that stopped cleanly"
    with stack.worker():
        wait_for(lambda: admin.execute(
            "SELECT count(*) AS n FROM insurance.integration_emissions WHERE risk_item_id = ANY(%s) AND status = 'SUCCESS'",
            (ids,)).fetchone()["n"] == 30, what="the rest delivered by the next worker")


def test_a_chat_outage_delays_the_notice_and_never_the_emission(stack, worker, admin, insert_items):
    stack.fault(provider="CHAT", count=1, status=503)
    stack.fault(provider="PROVIDER_A", count=1, status=503)
    [item] = insert_items()
    em = final(admin, item["id"])
    assert em["status"] == "SUCCESS" and em["attempts"] == 2
    assert httpx.get(f"{stack.sandbox}/_sandbox/faults").json()["faults"] == []  # the chat did fail once
    wait_for(lambda: any(r["status"] == 200 for r in stack.requests("CHAT")
                         if str(item["uid"]) in orjson.dumps(r["body"]).decode()),
             what="the notice delivered once the chat is back")
