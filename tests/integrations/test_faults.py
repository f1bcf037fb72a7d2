"""The fault suite (issue 12): a provider that misbehaves in one emission of a batch of ten
never poisons the other nine, is never called twice at once for one key, and leaves a clean,
bounded record; a worker with the wrong secret loses nothing; dead letters end to end.

Real processes (sandbox, API, worker) with short settings: backoff base 1 s and cap 2 s,
a total deadline of 2 s per provider call, 3 outbox attempts before a row dies.
"""
from __future__ import annotations

import datetime
import email.utils
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from tests.conftest import ROOT, free_port
from tests.fixtures.pipeline import Stack, start_stack, wait_for

SETTINGS = {"INTEGRATION_MAX_ATTEMPTS": "3", "INTEGRATION_RETRY_BASE_SECONDS": "1", "INTEGRATION_RETRY_CAP_SECONDS": "2",
            "HTTP_TOTAL_TIMEOUT": "2", "WORKER_LEASE_SECONDS": "10", "OUTBOX_MAX_ATTEMPTS": "3"}
SETTLE_SECONDS = 15.0  # deadline 2 s + cap 2 s + poll, with room for a loaded machine


@pytest.fixture(scope="module")
def fstack(admin) -> Iterator[Stack]:
    with start_stack(**SETTINGS) as started, started.worker():
        yield started


def _http_date(seconds_from_now: float) -> str:
    return email.utils.format_datetime(
        datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=seconds_from_now), usegmt=True)


FAULTS: dict[str, dict[str, Any]] = {
    "absurd Retry-After": {"status": 503, "retryAfter": 10_000_000_000_000},
    "Retry-After as an HTTP-date": {"status": 503, "retryAfter": _http_date(86400 * 365)},
    "raw body with NUL and HTML": {"status": 500, "body": "<html><body>\u0000\u0007 broken" + "\u00e9" * 20000 + "</body></html>"},
    "megabytes of body": {"status": 502, "body": "x" * (3 * 1024 * 1024)},
    "a success that is not JSON": {"status": 201, "body": "<html>issued, probably</html>"},
    "trickle": {"trickle": 6},
    "reset": {"reset": True},
    "timeout": {"timeout": 8},
}


@pytest.mark.parametrize("name", list(FAULTS))
def test_one_faulted_emission_in_ten_leaves_nine_successes(name, fstack, admin, insert_items):
    httpx.post(f"{fstack.sandbox}/_sandbox/reset").raise_for_status()
    started = admin.execute("SELECT now() AS t").fetchone()["t"]
    fstack.fault(provider="PROVIDER_A", count=1, **FAULTS[name])
    items = insert_items(10)
    ids = [i["id"] for i in items]

    def outcomes() -> list[dict]:
        return admin.execute("SELECT risk_item_id, status, attempts, error_history, "
                             "octet_length(error_history::text) AS bytes FROM insurance.integration_emissions "
                             "WHERE risk_item_id = ANY(%s) AND event = 'SALES_DISPATCH'", (ids,)).fetchall()

    t0 = time.monotonic()
    rows = wait_for(lambda: (r := outcomes()) and len(r) == 10 and sum(e["status"] == "SUCCESS" for e in r) >= 9
                    and any(e["error_history"] for e in r) and r, SETTLE_SECONDS, "ten outcomes, one of them a failure")
    assert time.monotonic() - t0 < SETTLE_SECONDS
    clean = [r for r in rows if not r["error_history"]]
    [faulted] = [r for r in rows if r["error_history"]]
    assert len(clean) == 9 and all(r["status"] == "SUCCESS" and r["attempts"] == 1 for r in clean)
    first = faulted["error_history"][0]
    assert first["retryable"] is True and first["code"] in (
        "PROVIDER_UNAVAILABLE", "MALFORMED_RESPONSE", "PROVIDER_TIMEOUT", "PROVIDER_UNREACHABLE"), first
    for entry in faulted["error_history"]:
        text = orjson.dumps(entry).decode()
        assert len(text.encode()) < 8192 and "\\u0000" not in text and "\x00" not in text
    assert first["requestPayload"]["headers"]["X-Api-Key"] == "***", "operators see the masked request"

    # Let the retry of the faulted one run, then look at what the provider saw.
    em = wait_for(lambda: (e := next(r for r in outcomes() if r["risk_item_id"] == faulted["risk_item_id"]))
                  and e["status"] != "FAILED" and e, SETTLE_SECONDS, "the faulted emission's retry")
    assert em["status"] == "SUCCESS" and em["attempts"] == 2
    sandbox = httpx.get(f"{fstack.sandbox}/_sandbox/requests", params={"provider": "PROVIDER_A", "limit": 1000}).json()
    calls = sandbox["requests"]
    assert len(calls) <= 10 + 2, "at most a couple of extra provider calls"
    stats = httpx.get(f"{fstack.sandbox}/_sandbox/stats").json()
    assert stats["maxInFlightPerKey"]["PROVIDER_A"] == 1, "never two calls in flight for one key"
    uid = next(i["uid"] for i in items if i["id"] == faulted["risk_item_id"])
    times = [c["at"] for c in calls if c["idempotencyKey"] == f"{uid}:PROVIDER_A:SALES_DISPATCH"]
    assert len(times) == 2 and times[1] - times[0] >= 0.5, "the retry waited for its backoff"
    # The worker records a delivery's answer after the API has stored the emission (in batches,
    # app/outbox/queue.py): wait for the records, then read them.
    def statuses() -> list[dict]:
        return admin.execute("SELECT last_status FROM outbox.http_requests WHERE url LIKE '/api/%%' "
                             "AND created_at >= %s", (started,)).fetchall()

    recorded = wait_for(lambda: (r := statuses()) and all(s["last_status"] is not None for s in r) and r,
                        SETTLE_SECONDS, "the worker's records of its deliveries")
    assert all(r["last_status"] == 200 for r in recorded), "the API answered every delivery 200"


def test_a_poisoned_outcome_in_the_middle_of_a_batch_blocks_nothing(fstack, admin, insert_items, make_package):
    """dispatch-batch with three deliveries; the middle item is deleted while its provider call
    runs, so its outcome cannot be stored: the other two are, and the answer is 200."""
    from app.tokens import service_tokens
    from tests.conftest import TEST_SECRETS
    quiet = make_package(variants=("travel",))  # no slug at insert: the triggers send nothing
    first, middle, last = (insert_items(package=quiet)[0] for _ in range(3))
    slow = make_package(variants=("travel",), sales="PROVIDER_B")
    admin.execute("UPDATE insurance.packages SET sales_integration_slug = 'PROVIDER_A' WHERE id = %s", (quiet["id"],))
    admin.execute("UPDATE insurance.risk_items SET package_id = %s WHERE id = %s", (slow["id"], middle["id"]))
    fstack.fault(provider="PROVIDER_B", count=1, delay=1.0)
    token = service_tokens(TEST_SECRETS["SERVICE_ROLE_SECRET"]).issue("test")
    body = {"requests": [{"id": n, "path": "/api/integrations/dispatch", "body": {"record": {"id": item["id"]}}}
                         for n, item in enumerate((first, middle, last), 1)]}

    import threading
    answer: dict[str, httpx.Response] = {}
    call = threading.Thread(target=lambda: answer.setdefault("r", httpx.post(
        f"{fstack.api}/api/integrations/dispatch-batch", json=body, headers={"Authorization": f"Bearer {token}"},
        timeout=30)))
    call.start()
    wait_for(lambda: admin.execute("SELECT count(*) AS n FROM insurance.emission_claims WHERE risk_item_id = %s",
                                   (middle["id"],)).fetchone()["n"], 5, "the middle key claimed")
    time.sleep(0.2)
    admin.execute("DELETE FROM insurance.risk_items WHERE id = %s", (middle["id"],))
    call.join()
    resp = answer["r"]
    assert resp.status_code == 200, resp.text
    results = resp.json()["data"]["results"]
    assert [r["status"] for r in results] == [200, 200, 200]
    assert [r["data"]["status"] for r in results] == ["SUCCESS", "FAILED", "SUCCESS"]
    assert results[1]["data"]["error"]["code"] == "OUTCOME_UNRECORDABLE"
    stored = admin.execute("SELECT risk_item_id, status FROM insurance.integration_emissions WHERE risk_item_id = ANY(%s)",
                           ([first["id"], last["id"]],)).fetchall()
    assert sorted(r["status"] for r in stored) == ["SUCCESS", "SUCCESS"]


def test_a_worker_without_the_service_secret_refuses_to_start_outside_development(fstack):
    env = {k: v for k, v in fstack.env.items() if k != "SERVICE_ROLE_SECRET"}
    done = subprocess.run([sys.executable, "-m", "app", "worker"], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 2 and "SERVICE_ROLE_SECRET" in done.stderr


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", "outbox", *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def test_dead_letters_end_to_end(fstack, admin):
    url = f"http://127.0.0.1:{free_port()}/nobody-listens"
    row_id = admin.execute("SELECT outbox.http_post(%s, '{\"hello\": 1}') AS id", (url,)).fetchone()["id"]

    def dead() -> dict | None:
        row = admin.execute("SELECT * FROM outbox.http_requests WHERE id = %s", (row_id,)).fetchone()
        return row if row["dead_at"] is not None else None

    try:
        _dead_letter_round_trip(fstack, admin, row_id, dead)
    finally:  # other modules count dead letters in their metrics: leave none behind
        admin.execute("DELETE FROM outbox.http_requests WHERE id = %s", (row_id,))


def _dead_letter_round_trip(fstack, admin, row_id, dead) -> None:
    row = wait_for(dead, 20, "the row to die after OUTBOX_MAX_ATTEMPTS=3")
    assert row["attempts"] == 3 and row["delivered_at"] is None and row["last_status"] is None
    listed = _cli(fstack.env, "list", "--dead", "--limit", "50")
    assert listed.returncode == 0, listed.stderr
    assert row_id in [r["id"] for r in orjson.loads(listed.stdout)]
    retried = _cli(fstack.env, "retry", str(row_id))
    assert retried.returncode == 0 and orjson.loads(retried.stdout) == [{"id": row_id, "result": "queued"}]
    audit = admin.execute("SELECT actor, result, via FROM insurance.audit_log WHERE action = 'outbox.retry' "
                          "AND targets @> %s::jsonb", (orjson.dumps([row_id]).decode(),)).fetchone()
    assert audit and audit["actor"].startswith("cli:") and audit["result"] == "ok" and audit["via"] == "cli"
    time.sleep(0.5)
    assert dead() is None, "alive again"
    row = wait_for(dead, 20, "the row to die again")
    assert row["attempts"] == 3
    unknown = _cli(fstack.env, "retry", "999999999999")
    assert unknown.returncode == 1 and orjson.loads(unknown.stdout)[0]["result"] == "not_found"
