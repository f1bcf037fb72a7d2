"""The provider sandbox over HTTP: strict like a real provider, recording, failing on demand."""
from __future__ import annotations

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
    assert wrong.status_code == 400 and "productCode must be PA-TRAVEL" in wrong.json()["reason"]
    no_block = post_a(http, {k: v for k, v in travel_policy().items() if k != "travel"}, key=str(uuid.uuid4()))
    assert no_block.status_code == 400 and no_block.json()["reason"] == "travel is required (object)"
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
    assert sent.status_code == 400 and sent.json()["reason"] == "to must name at least one recipient"


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
