"""The provider sandbox over HTTP: strict like a real provider, recording, failing on demand."""
from __future__ import annotations

import time
import uuid

import httpx
import pytest

from app.sandbox import credentials


@pytest.fixture
def http(sandbox):
    with httpx.Client(base_url=sandbox, timeout=5) as client:
        yield client
        client.delete("/_sandbox/faults")


def travel_policy(**change) -> dict:
    body = {"productCode": "PA-TRAVEL", "externalReference": str(uuid.uuid4()), "partnerPolicyId": "p-1",
            "insured": {"fullName": "Ada"}, "premium": {"amount": 10, "currency": "EUR"}, "coverages": [],
            "travel": {"travellers": 1}}
    return {**body, **change}


def post_a(http, body, key: str | None = "k", api_key=credentials.PROVIDER_A_API_KEY, variant="travel"):
    headers = {"X-Api-Key": api_key, **({"Idempotency-Key": key} if key else {})}
    return http.post(f"/provider-a/v1/{variant}/policies", json=body, headers=headers)


def test_provider_a_is_strict(http):
    assert post_a(http, travel_policy(), api_key="nope").status_code == 401
    missing = post_a(http, travel_policy(), key=None)
    assert missing.status_code == 400 and missing.json()["error"] == "missing_idempotency_key"
    wrong = post_a(http, travel_policy(productCode="PA-HOME"), key=str(uuid.uuid4()))
    assert wrong.status_code == 400 and wrong.json()["reason"] == "productCode must be same as const definition: PA-TRAVEL"
    no_block = post_a(http, {k: v for k, v in travel_policy().items() if k != "travel"}, key=str(uuid.uuid4()))
    assert no_block.status_code == 400 and no_block.json()["reason"] == "body must contain ['travel'] properties"
    assert post_a(http, travel_policy(), variant="boat").status_code == 404


def test_the_same_idempotency_key_gets_the_same_policy(http):
    key = str(uuid.uuid4())
    before = http.get("/_sandbox/stats").json()["policies"]["PROVIDER_A"]
    first, again = post_a(http, travel_policy(), key), post_a(http, travel_policy(), key)
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["policyNumber"] == again.json()["policyNumber"]
    assert again.headers["Idempotent-Replayed"] == "true"
    assert http.get("/_sandbox/stats").json()["policies"]["PROVIDER_A"] == before + 1
    seen = http.get("/_sandbox/requests", params={"provider": "PROVIDER_A"}).json()["requests"]
    assert [r["status"] for r in seen if r["idempotencyKey"] == key] == [201, 200]
    assert all(r["provider"] == "PROVIDER_A" for r in seen)


def test_identity_provider_and_mail_check_credentials(http):
    (client_id, secret), = credentials.IDP_CLIENTS.items()
    bad = http.post("/idp/oauth/token", data={"grant_type": "client_credentials", "client_id": client_id,
                                              "client_secret": "wrong"})
    assert bad.status_code == 401 and bad.json()["error"] == "invalid_client"
    grant = http.post("/idp/oauth/token", data={"grant_type": "password", "client_id": client_id})
    assert grant.status_code == 400 and grant.json()["error"] == "unsupported_grant_type"
    good = http.post("/idp/oauth/token", auth=(client_id, secret), data={"grant_type": "client_credentials"})
    assert good.status_code == 200 and good.json()["expires_in"] > 0
    recorded = http.get("/_sandbox/requests", params={"provider": "IDP"}).json()["requests"]
    assert secret not in str(recorded)  # the sandbox never records a client secret
    message = {"from": "a@example.com", "to": [{"email": "b@example.com"}], "subject": "s", "html": "<p>h</p>",
               "text": "t"}
    assert http.post("/mail/v1/messages", json=message, headers={"Idempotency-Key": "m",
                     "Authorization": "Bearer not-a-token"}).status_code == 401
    sent = http.post("/mail/v1/messages", json={**message, "to": []}, headers={
        "Idempotency-Key": str(uuid.uuid4()), "Authorization": f"Bearer {good.json()['access_token']}"})
    assert sent.status_code == 400 and sent.json()["reason"] == "to must contain at least 1 items"


def test_chat_sink_records_slack_messages(http):
    text = f"emission failed {uuid.uuid4()}"
    ok = http.post("/chat/webhook", json={"text": text})
    assert (ok.status_code, ok.text) == (200, "ok")
    assert http.post("/chat/webhook", json={"username": "x"}).text == "no_text"
    seen = http.get("/_sandbox/requests", params={"provider": "CHAT"}).json()["requests"]
    assert any(r["body"] == {"text": text} for r in seen)


def test_faults_fire_count_times_then_stop(http):
    assert http.post("/_sandbox/faults", json={"provider": "PROVIDER_A", "status": 503, "count": 2}).status_code == 201
    statuses = [post_a(http, travel_policy(), str(uuid.uuid4())).status_code for _ in range(3)]
    assert statuses == [503, 503, 201]
    http.post("/_sandbox/faults", json={"provider": "PROVIDER_A", "status": 429, "retryAfter": 9})
    limited = post_a(http, travel_policy(), str(uuid.uuid4()))
    assert (limited.status_code, limited.headers["Retry-After"]) == (429, "9")
    http.post("/_sandbox/faults", json={"provider": "PROVIDER_A", "malformed": True})
    broken = post_a(http, travel_policy(), str(uuid.uuid4()))
    assert broken.status_code == 200 and broken.content.startswith(b'{"policyNumber": "PA-') and \
        not broken.content.endswith(b"}")
    http.post("/_sandbox/faults", json={"provider": "PROVIDER_A", "status": 500, "count": 5})
    assert len(http.get("/_sandbox/faults").json()["faults"]) == 1
    assert http.delete("/_sandbox/faults").status_code == 204
    assert post_a(http, travel_policy(), str(uuid.uuid4())).status_code == 201


@pytest.mark.parametrize("fault, reason", [
    ({"provider": "NOPE", "status": 503}, "provider must be one of"),
    ({"provider": "PROVIDER_A"}, "give exactly one of"),
    ({"provider": "PROVIDER_A", "status": 503, "delay": 1}, "give exactly one of"),
    ({"provider": "PROVIDER_A", "status": 200}, "status must be an HTTP status 400-599"),
    ({"provider": "PROVIDER_A", "timeout": -1}, "timeout must be a number of seconds"),
    ({"provider": "PROVIDER_A", "status": 503, "count": 0}, "count must be an integer >= 1"),
])
def test_a_bad_fault_is_refused_with_a_reason(http, fault, reason):
    answer = http.post("/_sandbox/faults", json=fault)
    assert answer.status_code == 400 and answer.json()["reason"].startswith(reason)
    assert http.get("/_sandbox/faults").json()["faults"] == []


# -- the switches for misbehaving providers (issue 12) ----------------------------------------

def test_a_raw_body_fault_answers_nul_html_and_a_date_retry_after(http):
    date = "Wed, 21 Oct 2037 07:28:00 GMT"
    assert http.post("/_sandbox/faults", json={"provider": "PROVIDER_A", "status": 503, "retryAfter": date,
                                                "body": "<html>\u0000down\u0007</html>"}).status_code == 201
    answer = post_a(http, travel_policy(), key=str(uuid.uuid4()))
    assert answer.status_code == 503 and answer.headers["Retry-After"] == date
    assert answer.content == b"<html>\x00down\x07</html>" and answer.headers["Content-Type"].startswith("text/html")
    big = "x" * (3 * 1024 * 1024)
    assert http.post("/_sandbox/faults", json={"provider": "PROVIDER_A", "body": big}).status_code == 201
    answer = post_a(http, travel_policy(), key=str(uuid.uuid4()))
    assert answer.status_code == 200 and len(answer.content) == len(big)


def test_a_reset_fault_closes_the_connection_without_an_answer(http):
    http.post("/_sandbox/faults", json={"provider": "PROVIDER_A", "reset": True}).raise_for_status()
    with pytest.raises(httpx.TransportError):
        post_a(http, travel_policy(), key=str(uuid.uuid4()))
    assert post_a(http, travel_policy(), key=str(uuid.uuid4())).status_code == 201, "one fault, then normal"


def test_a_trickle_fault_sends_a_normal_answer_slowly(http):
    http.post("/_sandbox/faults", json={"provider": "PROVIDER_A", "trickle": 1}).raise_for_status()
    answer = post_a(http, travel_policy(), key=str(uuid.uuid4()))
    assert answer.status_code == 201 and answer.json()["policyNumber"].startswith("PA-TRA-")
    assert answer.elapsed.total_seconds() >= 0.8


def test_faults_that_make_no_sense_are_refused(http):
    for fault in ({"provider": "PROVIDER_A", "reset": True, "body": "x"},
                  {"provider": "PROVIDER_A", "status": 503, "retryAfter": "a\r\nX-Evil: 1"},
                  {"provider": "PROVIDER_A", "trickle": 0}, {"provider": "PROVIDER_A", "body": 7}):
        assert http.post("/_sandbox/faults", json=fault).status_code == 400, fault


def test_stats_count_the_most_concurrent_requests_for_one_key(http):
    import concurrent.futures
    http.post("/_sandbox/reset").raise_for_status()
    key = str(uuid.uuid4())
    http.post("/_sandbox/faults", json={"provider": "PROVIDER_A", "delay": 0.5, "count": 2}).raise_for_status()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda _: post_a(httpx.Client(base_url=http.base_url, timeout=5), travel_policy(), key),
                                range(2)))
    assert sorted(a.status_code for a in answers) == [200, 201]
    post_a(http, travel_policy(), str(uuid.uuid4()))
    stats = http.get("/_sandbox/stats").json()
    assert stats["maxInFlightPerKey"]["PROVIDER_A"] == 2 and stats["maxInFlightPerKey"]["PROVIDER_B"] == 0


def test_a_client_that_hangs_up_is_no_longer_in_flight(http):
    http.post("/_sandbox/reset").raise_for_status()
    key = str(uuid.uuid4())
    http.post("/_sandbox/faults", json={"provider": "PROVIDER_A", "timeout": 3}).raise_for_status()
    with httpx.Client(base_url=http.base_url, timeout=0.5) as impatient, pytest.raises(httpx.TimeoutException):
        post_a(impatient, travel_policy(), key)
    time.sleep(0.3)  # the sandbox learns of the hang-up a moment later (a real retry waits its backoff)
    assert post_a(http, travel_policy(), key).status_code == 201, "the retry, while the first still sleeps"
    assert http.get("/_sandbox/stats").json()["maxInFlightPerKey"]["PROVIDER_A"] == 1
