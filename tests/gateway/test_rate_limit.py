"""Rate limiting per channel (RATE_LIMIT_PER_MINUTE): headers, 429, shared across processes."""
from __future__ import annotations

import time

import falcon.testing
import httpx
import pytest

from app.app import create_app
from app.config import Config
from tests.conftest import child_environ, free_port, running
from tests.fixtures.channels import api, bearer

LIMIT = 3


def wait_for_a_fresh_minute_if_needed(needed: float = 5.0) -> None:
    """The window is a calendar minute: start where the whole test fits in one."""
    left = 60 - time.time() % 60
    if left < needed:
        time.sleep(left + 0.05)


async def test_limit_holds_across_two_app_instances(client, make_channel, authorize, make_package, admin):
    """Two apps with their own pools (as two processes would have) share the count in PostgreSQL."""
    channel = make_channel(branches=("v1",))
    token = await authorize(channel)
    config = Config.from_env(child_environ(RATE_LIMIT_PER_MINUTE=str(LIMIT)))
    async with falcon.testing.ASGIConductor(create_app(config)) as one, \
            falcon.testing.ASGIConductor(create_app(config)) as two:
        wait_for_a_fresh_minute_if_needed()
        answers = [await app.simulate_get(api("v1", "risk-items"), headers=bearer(token))
                   for app in (one, two, one)]
        assert [r.status_code for r in answers] == [200, 200, 200]
        assert [r.headers["x-ratelimit-remaining"] for r in answers] == ["2", "1", "0"]
        assert {r.headers["x-ratelimit-limit"] for r in answers} == {str(LIMIT)}
        reset = int(answers[0].headers["x-ratelimit-reset"])
        assert reset % 60 == 0 and 0 < reset - time.time() <= 60

        refused = await two.simulate_post(
            api("v1", "risk-items"), headers=bearer(token),
            json={"package_uid": make_package()["uid"], "policy_uid": "P-RL", "variant": "travel",
                  "insured_subject": {}})
        assert refused.status_code == 429
        assert refused.json["error"]["code"] == "RATE_LIMITED"
        assert refused.headers["x-ratelimit-remaining"] == "0"
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert refused.json["error"]["details"] == {"retryAfter": int(refused.headers["retry-after"])}
        assert admin.execute("SELECT count(*) AS n FROM insurance.risk_items WHERE channel_id = %s",
                             (channel["id"],)).fetchone()["n"] == 0, "a refused call does nothing"
        validator = await one.simulate_get(api("v1", "auth/validator"), headers=bearer(token))
        assert validator.status_code == 429

        other = make_channel(branches=("v1",))
        resp = await one.simulate_get(api("v1", "risk-items"), headers=bearer(await authorize(other)))
        assert resp.status_code == 200 and resp.headers["x-ratelimit-remaining"] == "2", "per channel"


async def test_no_limit_no_headers(client, make_channel, authorize):
    token = await authorize(make_channel(branches=("v1",)))
    for _ in range(LIMIT + 2):
        resp = await client.simulate_get(api("v1", "risk-items"), headers=bearer(token))
        assert resp.status_code == 200
        assert "x-ratelimit-limit" not in resp.headers


def test_limit_holds_across_two_live_processes(make_channel):
    """Two real uvicorn processes: the fourth call of the minute is refused by whichever answers."""
    channel = make_channel(branches=("v1",))
    ports = [free_port(), free_port()]
    env = {p: child_environ(PORT=str(p), RATE_LIMIT_PER_MINUTE=str(LIMIT)) for p in ports}
    with running(["serve", "--port", str(ports[0])], env[ports[0]], f"http://127.0.0.1:{ports[0]}/healthz"), \
            running(["serve", "--port", str(ports[1])], env[ports[1]], f"http://127.0.0.1:{ports[1]}/healthz"):
        base = [f"http://127.0.0.1:{p}/api/gateway/v1" for p in ports]
        token = httpx.get(f"{base[0]}/auth/authorize", headers={"x-api-key": channel["key"]}).json()["data"]["access_token"]
        wait_for_a_fresh_minute_if_needed()
        codes = [httpx.get(f"{base[i % 2]}/risk-items", headers=bearer(token)).status_code for i in range(LIMIT + 1)]
    assert codes == [200] * LIMIT + [429]


@pytest.mark.parametrize("value", ["-1", "many"])
def test_a_bad_limit_stops_start_up(value):
    from app.config import ConfigError
    with pytest.raises(ConfigError, match="RATE_LIMIT_PER_MINUTE"):
        Config.from_env(child_environ(RATE_LIMIT_PER_MINUTE=value))
