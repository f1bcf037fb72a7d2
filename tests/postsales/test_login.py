"""The e-mail login through HTTP, with the code read from a real SMTP server."""
from __future__ import annotations

import asyncio

import falcon.testing
import jwt

from app.app import build_services, create_app
from app.config import Config
from tests.conftest import child_environ, free_port
from tests.postsales.conftest import PREFIX, code_of

REQUEST = f"{PREFIX}/auth/otp/request"
VERIFY = f"{PREFIX}/auth/otp/verify"


def assert_limited(resp, limit: int) -> None:
    """A used-up limit answers as every limit does (docs/api.md): details {retryAfter} in camelCase,
    Retry-After, and X-RateLimit-Limit (the limit refused), -Remaining 0, -Reset when it frees."""
    import time
    retry_after = int(resp.headers["retry-after"])
    assert resp.json["error"]["details"] == {"retryAfter": retry_after}, resp.text
    assert resp.headers.get("x-ratelimit-limit") == str(limit), dict(resp.headers)
    assert resp.headers.get("x-ratelimit-remaining") == "0"
    assert abs(int(resp.headers["x-ratelimit-reset"]) - (time.time() + retry_after)) <= 5


async def test_the_mailed_code_logs_the_holder_in(ps_client, mailbox, make_risk_item, holder_email):
    make_risk_item(holder_email=holder_email)
    resp = await ps_client.simulate_post(REQUEST, json={"email": holder_email.upper()})
    assert resp.status_code == 200, resp.text
    assert resp.json == {"success": True, "data": {
        "message": "If this e-mail holds active policies, a code has been sent to it.", "expires_in": 600}}

    message = await mailbox.wait_for(holder_email)
    code = code_of(message)
    html = message.get_body(("html",)).get_content()
    assert code in html and "10 minutes" in html
    assert "10 minutes" in message.get_body(("plain",)).get_content()

    resp = await ps_client.simulate_post(VERIFY, json={"email": holder_email, "otp": code})
    assert resp.status_code == 200, resp.text
    data = resp.json["data"]
    assert data["token_type"] == "Bearer" and data["expires_in"] == 3600
    claims = jwt.decode(data["access_token"], options={"verify_signature": False})
    assert claims["email"] == claims["sub"] == holder_email
    assert claims["aud"] == "postsales" and claims["iss"].endswith("-postsales")
    assert claims["exp"] - claims["iat"] == 3600 and claims["jti"]
    assert jwt.get_unverified_header(data["access_token"])["alg"] == "HS256"

    resp = await ps_client.simulate_get(f"{PREFIX}/me/risk-items",
                                        headers={"Authorization": f"Bearer {data['access_token']}"})
    assert resp.status_code == 200

    again = await ps_client.simulate_post(VERIFY, json={"email": holder_email, "otp": code})
    assert again.status_code == 401 and again.json["error"]["code"] == "OTP_INVALID", "a code is single use"


async def test_known_and_unknown_emails_get_the_same_answer(ps_client, ps_services, mailbox, make_risk_item,
                                                            holder_email):
    make_risk_item(holder_email=holder_email)
    unknown = "nobody-" + holder_email
    answers = [await ps_client.simulate_post(REQUEST, json={"email": e}) for e in (unknown, holder_email)]
    assert [a.status_code for a in answers] == [200, 200]
    assert answers[0].json == answers[1].json
    await ps_services.mailer.drain()
    assert len(mailbox.to(holder_email)) == 1
    assert mailbox.to(unknown) == [], "no mail for an e-mail without active holder items"

    again = [await ps_client.simulate_post(REQUEST, json={"email": e}) for e in (unknown, holder_email)]
    assert [a.status_code for a in again] == [429, 429], "the cooldown applies alike"
    assert again[0].json["error"] == again[1].json["error"]
    assert again[0].json["error"]["code"] == "OTP_COOLDOWN"
    assert 1 <= int(again[1].headers["retry-after"]) <= 60
    assert_limited(again[1], limit=1)

    wrong = [await ps_client.simulate_post(VERIFY, json={"email": e, "otp": "000000"}) for e in (unknown, holder_email)]
    assert [w.status_code for w in wrong] == [401, 401]
    assert wrong[0].json["error"] == wrong[1].json["error"] == {"code": "OTP_INVALID", "message": "invalid code"}


async def test_fifty_concurrent_wrong_guesses_exhaust_the_code(ps_client, mailbox, admin, make_risk_item,
                                                               holder_email):
    make_risk_item(holder_email=holder_email)
    assert (await ps_client.simulate_post(REQUEST, json={"email": holder_email})).status_code == 200
    code = code_of(await mailbox.wait_for(holder_email))
    wrong = f"{(int(code) + 1) % 1_000_000:06d}"

    answers = await asyncio.gather(*[
        ps_client.simulate_post(VERIFY, json={"email": holder_email, "otp": wrong}) for _ in range(50)])
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [401] * 5 + [429] * 45, "only POSTSALES_OTP_MAX_ATTEMPTS guesses are evaluated"
    refused = next(a for a in answers if a.status_code == 429)
    assert refused.json["error"]["code"] == "OTP_ATTEMPTS_EXHAUSTED" and refused.headers["retry-after"]
    assert_limited(refused, limit=5)

    right = await ps_client.simulate_post(VERIFY, json={"email": holder_email, "otp": code})
    assert right.status_code == 429, "the right code is unusable once attempts are exhausted"
    row = admin.execute("SELECT attempts, consumed_at FROM insurance.postsales_otp WHERE email = %s",
                        (holder_email,)).fetchone()
    assert row == {"attempts": 51, "consumed_at": None}


async def test_malformed_bodies_are_400(ps_client):
    cases = [
        (REQUEST, None),
        (REQUEST, ["a@b.co"]),
        (REQUEST, {"email": "not-an-email"}),
        (REQUEST, {"email": "a@b.co", "extra": 1}),
        (VERIFY, {"email": "a@b.co", "otp": "12345"}),
        (VERIFY, {"email": "a@b.co", "otp": 123456}),
        (VERIFY, {"email": "a@b.co", "otp": "12345a"}),
        (VERIFY, {"otp": "123456"}),
    ]
    for path, body in cases:
        resp = await ps_client.simulate_post(path, json=body) if body is not None else \
            await ps_client.simulate_post(path, body=b"{not json", headers={"Content-Type": "application/json"})
        assert resp.status_code == 400, (path, body, resp.text)
        assert resp.json["error"]["code"] == ("VALIDATION_ERROR" if body else "MALFORMED_JSON"), (path, body)


async def test_otp_routes_answer_only_post(ps_client):
    resp = await ps_client.simulate_get(REQUEST)
    assert resp.status_code == 405
    assert set(resp.headers["allow"].replace(" ", "").split(",")) == {"POST", "OPTIONS"}


async def test_a_mail_server_that_is_down_changes_nothing_for_the_client(make_risk_item, holder_email):
    config = Config.from_env(child_environ(SMTP_URL=f"smtp://127.0.0.1:{free_port()}"))
    services = build_services(config)
    make_risk_item(holder_email=holder_email)
    async with falcon.testing.ASGIConductor(create_app(config, services)) as conductor:
        resp = await conductor.simulate_post(REQUEST, json={"email": holder_email})
        await services.mailer.drain()
    assert resp.status_code == 200, "the failure is logged, never shown (nor a hint that the e-mail is known)"
