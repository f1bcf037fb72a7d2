"""`serve --workers N`: the secrets are settled once, in the parent, so a token issued by one
API process verifies on every other (before, each generated its own in development and test)."""
from __future__ import annotations

import os
import time

import httpx

from app.config import SECRET_NAMES
from tests.conftest import free_port, running


def test_a_token_issued_by_one_process_verifies_on_the_others(make_channel):
    channel = make_channel(branches=("v1",))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in SECRET_NAMES}
    env.update(APP_ENV="test", PORT=str(port), LOG_LEVEL="warning")  # test: ephemeral secrets
    url = f"http://127.0.0.1:{port}"
    with running(["serve", "--port", str(port), "--workers", "2"], env, f"{url}/healthz") as proc:
        time.sleep(2)  # both uvicorn workers accepting, not just the first
        statuses = []
        token = None
        for _ in range(40):  # a new connection each: the kernel spreads them over both processes
            if token is None:
                resp = httpx.get(f"{url}/api/gateway/v1/auth/authorize", headers={"x-api-key": channel["key"]})
                assert resp.status_code == 200, resp.text
                token = resp.json()["data"]["access_token"]
            resp = httpx.get(f"{url}/api/gateway/v1/risk-items", headers={"Authorization": f"Bearer {token}"})
            statuses.append(resp.status_code)
        assert proc.poll() is None
    assert statuses == [200] * 40, statuses
