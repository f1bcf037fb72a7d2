"""The dashboard RPC end to end: the real @trpc/client under Node, and retries through the worker.

Real processes: the provider sandbox, the API (uvicorn) and, where a retry must be delivered,
the worker. The automatic retry is an hour away here (INTEGRATION_RETRY_BASE_SECONDS), so an
emission that reaches SUCCESS within the test got there through the dashboard's retry.
"""
from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import httpx
import orjson
import pytest

from tests.conftest import child_environ
from tests.dashboard.conftest import PASSWORD
from tests.fixtures.pipeline import Stack, emission, start_stack, wait_for

MISSING_ID = 999_999_999_999


@pytest.fixture(scope="module")
def stack(admin) -> Iterator[Stack]:
    # The automatic retry is an hour away: only the dashboard's retry can explain a SUCCESS.
    with start_stack(INTEGRATION_RETRY_BASE_SECONDS="3600", INTEGRATION_RETRY_CAP_SECONDS="7200") as started:
        yield started


def dashboard(stack: Stack, user: dict) -> httpx.Client:
    """An HTTP client holding the cookie of a real login."""
    http = httpx.Client(base_url=stack.api, timeout=30)
    resp = http.post("/api/auth/login", json={"email": user["email"], "password": user["password"]})
    assert resp.status_code == 200, resp.text
    return http


def sent_for(stack: Stack, provider: str, item: dict) -> list[dict]:
    """What the sandbox received from us about this risk item."""
    return [r for r in stack.requests(provider) if item["policy_uid"] in orjson.dumps(r.get("body")).decode()]


def run_wire(client_dir, stack: Stack, user: dict, data: dict) -> dict:
    env = {**child_environ(), "BASE_URL": stack.api, "EMAIL": user["email"], "PASSWORD": PASSWORD,
           "WIRE_INPUT": json.dumps(data)}
    done = subprocess.run(["node", "wire.mjs"], cwd=client_dir, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_real_trpc_client(stack, trpc_client_dir, make_user, make_package, make_emission, insert_items, admin):
    user = make_user()
    [item] = insert_items(sales=None)
    make_emission(item["id"], provider="PROVIDER_A", event="SALES_DISPATCH", status="FAILED")
    make_emission(item["id"], provider="MAIL_PROVIDER", event="POLICY_CREATED", status="SUCCESS")
    [synced] = insert_items(package=make_package(variants=("travel",), post_sales="PROVIDER_B"))
    [failed] = insert_items(sales=None)
    # PROVIDER_B: its queued retry, delivered by a later test's worker, must not meet PROVIDER_A's faults.
    to_retry = make_emission(failed["id"], provider="PROVIDER_B", event="SALES_DISPATCH", status="FAILED")

    report = run_wire(trpc_client_dir, stack, user, {"riskItemId": item["id"], "syncRiskItemId": synced["id"],
                                                     "retryEmissionId": to_retry["id"], "missingId": MISSING_ID})

    # A query, and a query without input.
    assert report["query"]["ok"], report["query"]
    got = report["query"]["data"]
    assert got["riskItem"]["id"] == item["id"]
    assert [(e["provider"], e["status"], e["attempts"]) for e in got["emissions"]] == [
        ("PROVIDER_A", "FAILED", 1), ("MAIL_PROVIDER", "SUCCESS", 1)]
    assert got["emissions"][0]["lastError"]["code"] == "PROVIDER_UNAVAILABLE" and got["emissions"][0]["nextRetryAt"]
    assert report["queryWithoutInput"]["ok"] and report["queryWithoutInput"]["data"]["items"]

    # Mutations: a beneficiaries sync issued at the sandbox, a retry queued.
    sync = report["mutation"]
    assert sync["ok"], sync
    assert sync["data"]["provider"] == "PROVIDER_B" and sync["data"]["event"] == "BENEFICIARIES_SYNC"
    assert sync["data"]["status"] == "SUCCESS" and sync["data"]["externalId"]
    assert sent_for(stack, "PROVIDER_B", synced), "the sandbox never heard of the synced item"
    assert report["retry"] == {"ok": True, "data": [{"id": to_retry["id"], "status": "FAILED", "queued": True}]}

    # Errors arrive as TRPCClientError with their codes.
    assert report["notFound"] == {"ok": False, "name": "TRPCClientError", "message": "risk item not found",
                                  "code": -32004, "dataCode": "NOT_FOUND", "httpStatus": 404,
                                  "path": "integrationEmissions.byRiskItem"}
    assert (report["badInput"]["code"], report["badInput"]["httpStatus"]) == (-32600, 400)
    assert report["badInput"]["message"].startswith("Invalid input: riskItemId")
    assert (report["unknownProcedure"]["dataCode"], report["unknownProcedure"]["httpStatus"]) == ("NOT_FOUND", 404)
    assert report["queryAsMutation"]["dataCode"] == "METHOD_NOT_SUPPORTED"
    assert (report["unauthorized"]["code"], report["unauthorized"]["httpStatus"]) == (-32001, 401)

    # httpBatchLink: three queries in one GET with batch=1; one of them fails alone.
    batch = report["batch"]
    assert len(batch["requests"]) == 1 and "batch=1" in batch["requests"][0]["url"]
    assert batch["requests"][0]["method"] == "GET"
    ok_item, listed, missing = batch["results"]
    assert ok_item["data"]["riskItem"]["id"] == item["id"]
    assert len(listed["data"]["items"]) == 2
    assert missing["dataCode"] == "NOT_FOUND"

    # httpBatchStreamLink: one request with trpc-accept: application/jsonl, the same answers.
    stream = report["stream"]
    assert len(stream["requests"]) == 1 and stream["requests"][0]["stream"]
    assert [r["ok"] for r in stream["results"]] == [True, True, False]
    assert stream["results"][0]["data"] == ok_item["data"]
    assert stream["results"][2]["dataCode"] == "NOT_FOUND" and stream["results"][2]["code"] == -32004

    # superjson: batch, stream, mutation and error all decode (no null data, no transform error).
    sj = report["superjsonBatch"]
    assert len(sj["requests"]) == 1
    assert sj["results"][0]["data"]["riskItem"]["id"] == item["id"]
    assert sj["results"][1]["data"]["items"]
    assert sj["results"][2]["dataCode"] == "NOT_FOUND"
    sj_stream = report["superjsonStream"]
    assert sj_stream[0]["data"]["riskItem"]["id"] == item["id"]
    assert len(sj_stream[1]["data"]["items"]) == 1
    assert sj_stream[2]["dataCode"] == "NOT_FOUND"
    assert report["superjsonMutation"]["ok"] and report["superjsonMutation"]["data"]["status"] == "SUCCESS"
    assert report["superjsonError"]["code"] == -32004


@pytest.mark.parametrize("first_failure", ["FAILED", "ABANDONED"])
def test_retry_emissions_reaches_success_at_the_sandbox(stack, make_user, insert_items, admin, first_failure):
    # The first call fails: a 503 leaves the emission FAILED (next retry an hour away), a 400 ABANDONED.
    stack.fault(provider="PROVIDER_A", count=1, status=503 if first_failure == "FAILED" else 400)
    with stack.worker():
        [item] = insert_items(sales="PROVIDER_A")
        failed = wait_for(lambda: (e := emission(admin, item["id"])) and e, what="the first emission")
        assert failed["status"] == first_failure and failed["attempts"] == 1
        http = dashboard(stack, make_user())
        resp = http.post("/api/trpc/integrationEmissions.retryEmissions", json={"emissionIds": [failed["id"]]})
        assert resp.status_code == 200, resp.text
        assert resp.json() == {"result": {"data": [{"id": failed["id"], "status": "FAILED", "queued": True}]}}
        done = wait_for(lambda: (e := emission(admin, item["id"])) and e["status"] == "SUCCESS" and e,
                        what="the retried emission's SUCCESS")
    assert done["external_id"]
    assert [r["status"] for r in sent_for(stack, "PROVIDER_A", item)] == [503 if first_failure == "FAILED" else 400, 201]
    view = http.get("/api/trpc/integrationEmissions.byRiskItem",
                    params={"input": json.dumps({"riskItemId": item["id"]})}).json()["result"]["data"]
    assert view["emissions"][0]["status"] == "SUCCESS" and view["emissions"][0]["nextRetryAt"] is None


def test_retry_emissions_of_an_unknown_id_is_not_found_and_changes_nothing(stack, make_user, insert_items,
                                                                          make_emission, admin):
    [item] = insert_items(sales=None)
    known = make_emission(item["id"], provider="PROVIDER_A", event="SALES_DISPATCH", status="FAILED")
    http = dashboard(stack, make_user())
    resp = http.post("/api/trpc/integrationEmissions.retryEmissions", json={"emissionIds": [known["id"], MISSING_ID]})
    assert resp.status_code == 404
    assert resp.json()["error"]["data"] == {"code": "NOT_FOUND", "httpStatus": 404,
                                            "path": "integrationEmissions.retryEmissions"}
    after = emission(admin, item["id"])
    assert after["next_retry_at"] == known["next_retry_at"]  # the known one was not touched either
