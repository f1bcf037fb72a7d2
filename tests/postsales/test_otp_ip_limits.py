"""OTP limits per client IP (guessing across many accounts from one address): requests and
failed verifications are counted per IP in PostgreSQL, 429 OTP_IP_RATE_LIMITED with Retry-After."""
from __future__ import annotations

import random

import falcon.testing
import pytest

from app.app import create_app
from app.config import Config
from tests.conftest import child_environ, unique
from tests.postsales.conftest import PREFIX, code_of


@pytest.fixture
async def limited(mailbox):
    config = Config.from_env(child_environ(SMTP_URL=mailbox.url, POSTSALES_OTP_IP_PER_HOUR="3",
                                           POSTSALES_VERIFY_IP_PER_HOUR="4"))
    async with falcon.testing.ASGIConductor(create_app(config)) as client:
        yield client


def an_ip() -> str:
    return f"10.{random.randrange(256)}.{random.randrange(256)}.{random.randrange(1, 255)}"


def assert_ip_limited(resp, limit: int) -> None:
    assert resp.status_code == 429, resp.text
    assert resp.json["error"]["code"] == "OTP_IP_RATE_LIMITED"
    assert 1 <= int(resp.headers["Retry-After"]) <= 3600
    # As every limit answers (issue 29): the limit refused, nothing left, when it frees.
    assert resp.json["error"]["details"] == {"retryAfter": int(resp.headers["Retry-After"])}
    assert resp.headers.get("X-RateLimit-Limit") == str(limit) and resp.headers["X-RateLimit-Remaining"] == "0"
    assert int(resp.headers["X-RateLimit-Reset"]) > 0


async def test_otp_requests_are_limited_per_client_ip(limited):
    ip = an_ip()
    for _ in range(3):
        resp = await limited.simulate_post(f"{PREFIX}/auth/otp/request", remote_addr=ip,
                                           json={"email": f"{unique('ip')}@example.com"})
        assert resp.status_code == 200, resp.text
    assert_ip_limited(await limited.simulate_post(f"{PREFIX}/auth/otp/request", remote_addr=ip,
                                                  json={"email": f"{unique('ip')}@example.com"}), limit=3)
    other = await limited.simulate_post(f"{PREFIX}/auth/otp/request", remote_addr=an_ip(),
                                        json={"email": f"{unique('ip')}@example.com"})
    assert other.status_code == 200, "another address is not limited"


async def test_failed_verifications_are_limited_per_client_ip(limited, mailbox, make_risk_item, holder_email):
    make_risk_item(holder_email=holder_email)
    ip = an_ip()
    assert (await limited.simulate_post(f"{PREFIX}/auth/otp/request", json={"email": holder_email},
                                        remote_addr=ip)).status_code == 200
    code = code_of(await mailbox.wait_for(holder_email))
    right = await limited.simulate_post(f"{PREFIX}/auth/otp/verify", remote_addr=ip,
                                        json={"email": holder_email, "otp": code})
    assert right.status_code == 200, "a right code does not count against the address"
    # Wrong guesses spread over many accounts, as a guesser would.
    for _ in range(4):
        resp = await limited.simulate_post(f"{PREFIX}/auth/otp/verify", remote_addr=ip,
                                           json={"email": f"{unique('victim')}@example.com", "otp": "123456"})
        assert resp.status_code == 401, resp.text
    assert_ip_limited(await limited.simulate_post(f"{PREFIX}/auth/otp/verify", remote_addr=ip,
                                                  json={"email": holder_email, "otp": "123456"}), limit=4)


@pytest.mark.parametrize("allowed,trusted", [("127.0.0.1", True), ("192.0.2.1", False)])
def test_forwarded_for_names_the_client_only_from_forwarded_allow_ips(mailbox, admin, allowed, trusted):
    """Behind a proxy every client shares the proxy's address unless the proxy is trusted
    (FORWARDED_ALLOW_IPS, passed to uvicorn by `serve`); then X-Forwarded-For is the client."""
    import httpx

    from tests.conftest import free_port, running

    admin.execute("DELETE FROM insurance.client_ip_limits WHERE ip = '127.0.0.1'")  # the proxy's own count
    port = free_port()
    env = child_environ(PORT=str(port), SMTP_URL=mailbox.url, FORWARDED_ALLOW_IPS=allowed,
                        POSTSALES_OTP_IP_PER_HOUR="1")
    url = f"http://127.0.0.1:{port}"
    with running(["serve", "--port", str(port)], env, f"{url}/healthz"):
        statuses = [httpx.post(f"{url}{PREFIX}/auth/otp/request", headers={"X-Forwarded-For": an_ip()},
                               json={"email": f"{unique('fwd')}@example.com"}).status_code for _ in range(2)]
    # Trusted: two clients, one request each. Not trusted: one client (the proxy), over its limit.
    assert statuses == ([200, 200] if trusted else [200, 429])
