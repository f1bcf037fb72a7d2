"""The sandbox's partner webhook receiver: verifies Standard Webhooks signatures, fails on demand."""
from __future__ import annotations

import base64
import datetime
import os
import time
import uuid

import httpx
import pytest
from standardwebhooks.webhooks import Webhook

SECRET = "whsec_" + base64.b64encode(os.urandom(32)).decode()


def _signed(secret: str, body: str, msg_id: str | None = None) -> dict[str, str]:
    msg_id = msg_id or f"msg_{uuid.uuid4().hex}"
    now = int(time.time())
    at = datetime.datetime.fromtimestamp(now, tz=datetime.UTC)
    return {"webhook-id": msg_id, "webhook-timestamp": str(now),
            "webhook-signature": Webhook(secret).sign(msg_id, at, body), "Content-Type": "application/json"}


@pytest.fixture
def http(sandbox):
    with httpx.Client(base_url=sandbox, timeout=5) as client:
        yield client


def test_a_signed_delivery_is_verified_and_listed(http):
    name = f"p-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/_sandbox/webhooks/{name}", json={"secret": SECRET}).status_code == 200
    body = '{"type": "emission.succeeded"}'
    assert http.post(f"/_sandbox/webhooks/{name}", content=body, headers=_signed(SECRET, body)).status_code == 204
    forged = _signed("whsec_" + base64.b64encode(b"x" * 32).decode(), body)
    assert http.post(f"/_sandbox/webhooks/{name}", content=body, headers=forged).status_code == 400
    [good, bad] = http.get("/_sandbox/webhooks", params={"name": name}).json()["webhooks"]
    assert good["verified"] is True and good["body"] == {"type": "emission.succeeded"} and good["raw"] == body
    assert bad["verified"] is False and bad["status"] == 400


def test_the_receiver_fails_the_next_n_then_answers(http):
    name = f"p-{uuid.uuid4().hex[:8]}"
    http.put(f"/_sandbox/webhooks/{name}", json={"secret": SECRET, "failNext": 2, "failStatus": 503})
    body = "{}"
    statuses = [http.post(f"/_sandbox/webhooks/{name}", content=body, headers=_signed(SECRET, body)).status_code
                for _ in range(3)]
    assert statuses == [503, 503, 204]
    assert http.put(f"/_sandbox/webhooks/{name}", json={"failNext": -1}).status_code == 400
    assert http.put(f"/_sandbox/webhooks/{name}", json={"secret": "whsec_!!"}).status_code == 400
