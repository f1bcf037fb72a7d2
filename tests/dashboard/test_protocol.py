"""The tRPC v11 HTTP protocol at its edges: statuses, envelopes, batching, streaming, superjson.

Each expected body is what @trpc/server's resolveResponse answers for the same request.
"""
from __future__ import annotations

import json
from urllib.parse import quote

import pytest

BY_ITEM = "integrationEmissions.byRiskItem"
LIST = "integrationEmissions.list"
RETRY = "integrationEmissions.retryEmissions"


def q(value) -> str:
    return quote(json.dumps(value), safe="")


def err(code: str, number: int, status: int, message: str, path: str | None = None, **extra) -> dict:
    data = {"code": code, "httpStatus": status, **extra}
    if path is not None:
        data["path"] = path
    return {"error": {"message": message, "code": number, "data": data}}


@pytest.fixture
def item(make_risk_item, make_emission):
    item = make_risk_item()
    make_emission(item["id"])
    return item


async def test_query_over_get_with_input(client, session, item):
    resp = await client.simulate_get(f"/api/trpc/{BY_ITEM}", query_string=f"input={q({'riskItemId': item['id']})}",
                                     headers=session["headers"])
    assert resp.status_code == 200
    assert resp.headers["content-type"] == "application/json"
    assert resp.headers["cache-control"] == "no-store"
    data = resp.json["result"]["data"]
    assert list(resp.json) == ["result"] and list(resp.json["result"]) == ["data"]
    assert data["riskItem"]["id"] == item["id"]
    assert [e["status"] for e in data["emissions"]] == ["FAILED"]


async def test_query_without_input_uses_defaults(client, session, item):
    resp = await client.simulate_get(f"/api/trpc/{LIST}", headers=session["headers"])
    assert resp.status_code == 200
    assert "items" in resp.json["result"]["data"]


async def test_unknown_procedure_is_404(client, session):
    resp = await client.simulate_get("/api/trpc/integrationEmissions.nope", headers=session["headers"])
    assert resp.status_code == 404
    assert resp.json == err("NOT_FOUND", -32004, 404, 'No procedure found on path "integrationEmissions.nope"',
                            "integrationEmissions.nope")


async def test_the_bare_endpoint_is_404_in_trpc_envelope(client, session):
    resp = await client.simulate_get("/api/trpc", headers=session["headers"])
    assert resp.status_code == 404
    assert resp.json["error"]["code"] == -32004


async def test_query_sent_as_post_is_405_with_allow(client, session):
    resp = await client.simulate_post(f"/api/trpc/{BY_ITEM}", json={"riskItemId": 1}, headers=session["headers"])
    assert resp.status_code == 405
    assert resp.headers["allow"] == "GET"
    assert resp.json == err("METHOD_NOT_SUPPORTED", -32005, 405,
                            f'Unsupported POST-request to query procedure at path "{BY_ITEM}"', BY_ITEM)


async def test_mutation_sent_as_get_is_405_with_allow(client, session):
    resp = await client.simulate_get(f"/api/trpc/{RETRY}", query_string=f"input={q({'emissionIds': [1]})}",
                                     headers=session["headers"])
    assert resp.status_code == 405
    assert resp.headers["allow"] == "POST"
    assert resp.json["error"]["data"]["code"] == "METHOD_NOT_SUPPORTED"


async def test_other_methods_are_405(client, session):
    resp = await client.simulate_delete(f"/api/trpc/{BY_ITEM}", headers=session["headers"])
    assert resp.status_code == 405
    assert resp.headers["allow"] == "GET, POST"
    assert resp.json["error"]["code"] == -32005


async def test_post_without_json_content_type_is_415(client, session):
    resp = await client.simulate_post(f"/api/trpc/{RETRY}", body='{"emissionIds": [1]}',
                                      headers={**session["headers"], "Content-Type": "text/plain"})
    assert resp.status_code == 415
    assert resp.json == err("UNSUPPORTED_MEDIA_TYPE", -32015, 415, 'Unsupported content-type "text/plain"')
    resp = await client.simulate_post(f"/api/trpc/{RETRY}", body='{"emissionIds": [1]}', headers=session["headers"])
    assert resp.status_code == 415
    assert resp.json["error"]["message"] == "Missing content-type header"


@pytest.mark.parametrize("raw,message", [
    ("{not json", "Input is not valid JSON"),
    (json.dumps({"riskItemId": "12"}), "Invalid input: riskItemId: Input should be a valid integer"),
    (json.dumps({"riskItemId": 0}), "Invalid input: riskItemId: Input should be greater than 0"),
    (json.dumps({"riskItemId": 1, "extra": True}), "Invalid input: extra: Extra inputs are not permitted"),
    (json.dumps([1]), "Invalid input: input: Input should be a valid dictionary or instance of ByRiskItemInput"),
])
async def test_bad_input_is_400(client, session, raw, message):
    resp = await client.simulate_get(f"/api/trpc/{BY_ITEM}", query_string=f"input={quote(raw, safe='')}",
                                     headers=session["headers"])
    assert resp.status_code == 400
    body = resp.json
    assert body["error"]["code"] == -32600 and body["error"]["data"]["code"] == "BAD_REQUEST"
    assert body["error"]["message"] == message
    assert body["error"]["data"]["path"] == BY_ITEM


async def test_missing_required_input_is_400(client, session):
    resp = await client.simulate_get(f"/api/trpc/{BY_ITEM}", headers=session["headers"])
    assert resp.status_code == 400
    assert resp.json["error"]["data"]["code"] == "BAD_REQUEST"


async def test_mutation_with_empty_body_means_no_input(client, session):
    resp = await client.simulate_post(f"/api/trpc/{RETRY}", body="",
                                      headers={**session["headers"], "Content-Type": "application/json"})
    assert resp.status_code == 400
    assert resp.json["error"]["message"].startswith("Invalid input: input: Input should be a valid dictionary")


async def test_unknown_id_is_not_found(client, session):
    resp = await client.simulate_get(f"/api/trpc/{BY_ITEM}", query_string=f"input={q({'riskItemId': 2**62})}",
                                     headers=session["headers"])
    assert resp.status_code == 404
    assert resp.json == err("NOT_FOUND", -32004, 404, "risk item not found", BY_ITEM)


async def test_batch_of_queries(client, session, item):
    inputs = {"0": {"riskItemId": item["id"]}, "1": {"limit": 1}}
    resp = await client.simulate_get(f"/api/trpc/{BY_ITEM},{LIST}", query_string=f"batch=1&input={q(inputs)}",
                                     headers=session["headers"])
    assert resp.status_code == 200
    first, second = resp.json
    assert first["result"]["data"]["riskItem"]["id"] == item["id"]
    assert len(second["result"]["data"]["items"]) == 1


async def test_batch_of_mixed_statuses_is_207(client, session, item):
    inputs = {"0": {"riskItemId": item["id"]}, "1": {"riskItemId": 2**62}}
    resp = await client.simulate_get(f"/api/trpc/{BY_ITEM},{BY_ITEM},nope.nope", query_string=f"batch=1&input={q(inputs)}",
                                     headers=session["headers"])
    assert resp.status_code == 207
    ok, missing, unknown = resp.json
    assert "result" in ok
    assert missing == err("NOT_FOUND", -32004, 404, "risk item not found", BY_ITEM)
    assert unknown == err("NOT_FOUND", -32004, 404, 'No procedure found on path "nope.nope"', "nope.nope")


async def test_batch_of_one_status_keeps_it(client, session):
    inputs = {"0": {"riskItemId": 2**62}, "1": {"riskItemId": 2**62 + 1}}
    resp = await client.simulate_get(f"/api/trpc/{BY_ITEM},{BY_ITEM}", query_string=f"batch=1&input={q(inputs)}",
                                     headers=session["headers"])
    assert resp.status_code == 404
    assert [e["error"]["data"]["code"] for e in resp.json] == ["NOT_FOUND", "NOT_FOUND"]


async def test_batch_input_must_be_an_object(client, session):
    resp = await client.simulate_get(f"/api/trpc/{BY_ITEM}", query_string=f"batch=1&input={q([1])}",
                                     headers=session["headers"])
    assert resp.status_code == 400
    assert resp.json == [err("BAD_REQUEST", -32600, 400, '"input" needs to be an object when doing a batch call',
                             BY_ITEM)]


async def test_batch_cannot_mix_queries_and_mutations(client, session):
    resp = await client.simulate_post(f"/api/trpc/{BY_ITEM},{RETRY}", query_string="batch=1", json={},
                                      headers=session["headers"])
    assert resp.status_code == 400
    assert resp.json == err("BAD_REQUEST", -32600, 400, "Cannot mix procedure types in call: mutation, query")


async def test_jsonl_batch_answers_one_resolved_head_line(client, session, item):
    inputs = {"0": {"riskItemId": item["id"]}, "1": {"riskItemId": 2**62}}
    resp = await client.simulate_get(f"/api/trpc/{BY_ITEM},{BY_ITEM}", query_string=f"batch=1&input={q(inputs)}",
                                     headers={**session["headers"], "trpc-accept": "application/jsonl"})
    assert resp.status_code == 200
    assert resp.text.endswith("\n") and resp.text.count("\n") == 1
    head = json.loads(resp.text)
    assert list(head) == ["0", "1"]
    [[first]] = head["0"]
    [[second]] = head["1"]
    assert first["result"]["data"]["riskItem"]["id"] == item["id"]
    assert second == err("NOT_FOUND", -32004, 404, "risk item not found", BY_ITEM)


async def test_jsonl_without_batch_is_400(client, session, item):
    resp = await client.simulate_get(f"/api/trpc/{BY_ITEM}", query_string=f"input={q({'riskItemId': item['id']})}",
                                     headers={**session["headers"], "trpc-accept": "application/jsonl"})
    assert resp.status_code == 400
    assert resp.json["error"]["message"] == "Streaming requests must be batched (you can do a batch of 1)"


async def test_superjson_input_is_answered_in_superjson(client, session, item):
    wire = {"json": {"riskItemId": item["id"]}}
    resp = await client.simulate_get(f"/api/trpc/{BY_ITEM}", query_string=f"input={q(wire)}",
                                     headers=session["headers"])
    assert resp.status_code == 200
    assert resp.json["result"]["data"]["json"]["riskItem"]["id"] == item["id"]
    missing = await client.simulate_get(f"/api/trpc/{BY_ITEM}", query_string=f"input={q({'json': {'riskItemId': 2**62}})}",
                                        headers=session["headers"])
    assert missing.status_code == 404
    assert missing.json == {"error": {"json": err("NOT_FOUND", -32004, 404, "risk item not found", BY_ITEM)["error"]}}


async def test_superjson_undefined_input_and_batch(client, session, item):
    undefined = {"json": None, "meta": {"values": ["undefined"], "v": 1}}
    inputs = {"0": undefined, "1": {"json": {"riskItemId": item["id"]}}}
    resp = await client.simulate_get(f"/api/trpc/{LIST},{BY_ITEM}", query_string=f"batch=1&input={q(inputs)}",
                                     headers=session["headers"])
    assert resp.status_code == 200
    listed, one = resp.json
    assert "items" in listed["result"]["data"]["json"]
    assert one["result"]["data"]["json"]["riskItem"]["id"] == item["id"]


async def test_superjson_stream_head_is_serialized_as_a_whole(client, session, item):
    inputs = {"0": {"json": {"riskItemId": item["id"]}}}
    resp = await client.simulate_get(f"/api/trpc/{BY_ITEM}", query_string=f"batch=1&input={q(inputs)}",
                                     headers={**session["headers"], "trpc-accept": "application/jsonl"})
    head = json.loads(resp.text)
    assert list(head) == ["json"]
    assert head["json"]["0"][0][0]["result"]["data"]["riskItem"]["id"] == item["id"]


async def test_head_is_204(client):
    resp = await client.simulate_head(f"/api/trpc/{BY_ITEM}")
    assert resp.status_code == 204


async def test_database_failure_is_500_without_detail(client, session, monkeypatch, services):
    async def broken(*args):
        raise RuntimeError("password=hunter2 in the DSN")
    from app.dashboard import router
    monkeypatch.setitem(router.PROCEDURES, BY_ITEM, router.Procedure("query", router.ByRiskItemInput, broken))
    resp = await client.simulate_get(f"/api/trpc/{BY_ITEM}", query_string=f"input={q({'riskItemId': 1})}",
                                     headers=session["headers"])
    assert resp.status_code == 500
    assert resp.json == err("INTERNAL_SERVER_ERROR", -32603, 500, "Internal server error", BY_ITEM)
    assert "hunter2" not in resp.text


async def test_a_superjson_client_reads_request_errors_too(client, session):
    resp = await client.simulate_post(f"/api/trpc/{RETRY}", body='{"json": {"emissionIds": [1]}}',
                                      headers={**session["headers"], "Content-Type": "text/plain"})
    assert resp.status_code == 415
    assert resp.json == {"error": {"json": err("UNSUPPORTED_MEDIA_TYPE", -32015, 415,
                                               'Unsupported content-type "text/plain"')["error"]}}


async def test_a_body_over_one_mebibyte_is_413(client, session):
    resp = await client.simulate_post(f"/api/trpc/{RETRY}", body='{"emissionIds": [' + "1," * 600_000 + "1]}",
                                      headers={**session["headers"], "Content-Type": "application/json"})
    assert resp.status_code == 413
    assert resp.json == err("PAYLOAD_TOO_LARGE", -32013, 413, "Request body too large")


async def test_a_path_with_a_slash_is_404_in_trpc_envelope(client, session):
    resp = await client.simulate_get("/api/trpc/integrationEmissions/list", headers=session["headers"])
    assert resp.status_code == 404
    assert resp.json == err("NOT_FOUND", -32004, 404, 'No procedure found on path "integrationEmissions/list"',
                            "integrationEmissions/list")
