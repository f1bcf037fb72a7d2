"""Device tokens for holders (issue 31, OWASP device cookies): a verified code gives the holder's
app a `device_token`; sent back as X-Device-Token it exempts otp/request and otp/verify from the
e-mail's ceilings (20 codes, 50 failed verifications an hour from all addresses), never from the
limits of the (e-mail, address). Every address here reaches the app as a trusted proxy names it
(X-Forwarded-For from 127.0.0.1, FORWARDED_ALLOW_IPS' default), as behind the real proxy."""
from __future__ import annotations

import itertools
import random

from tests.postsales.conftest import PREFIX, code_of

REQUEST = f"{PREFIX}/auth/otp/request"
VERIFY = f"{PREFIX}/auth/otp/verify"
PROXY = "127.0.0.1"


# Client addresses of this run, never reused (100.64.0.0/10, from a random start): one address's
# counters are never another test's.
_NEXT = itertools.count(random.randrange(1 << 21))


def addresses(n: int) -> list[str]:
    return [f"100.{64 + (k >> 16) % 64}.{(k >> 8) & 255}.{k & 255}" for k in (next(_NEXT) for _ in range(n))]


def via(address: str, device: str | None = None) -> dict[str, str]:
    return {"X-Forwarded-For": address, **({"X-Device-Token": device} if device else {})}


async def request(ps_client, email: str, address: str, device: str | None = None):
    return await ps_client.simulate_post(REQUEST, json={"email": email}, remote_addr=PROXY,
                                         headers=via(address, device))


async def verify(ps_client, email: str, code: str, address: str, device: str | None = None):
    return await ps_client.simulate_post(VERIFY, json={"email": email, "otp": code}, remote_addr=PROXY,
                                         headers=via(address, device))


async def mailed_code(ps_services, mailbox, email: str, before: int) -> str:
    await ps_services.mailer.drain()
    mails = mailbox.to(email)
    assert len(mails) > before, "no new code was mailed"
    return code_of(mails[-1])


async def log_in(ps_client, ps_services, mailbox, email: str, address: str, device: str | None = None) -> dict:
    """Request a code from `address` and verify it there: the verify answer's data."""
    before = len(mailbox.to(email))
    asked = await request(ps_client, email, address, device)
    assert asked.status_code == 200, asked.text
    code = await mailed_code(ps_services, mailbox, email, before)
    verified = await verify(ps_client, email, code, address, device)
    assert verified.status_code == 200, verified.text
    return verified.json["data"]


async def test_the_owner_with_a_device_token_gets_a_code_while_20_addresses_hold_the_ceiling(
        ps_client, ps_services, mailbox, make_risk_item, holder_email):
    """On main: after 20 requests from 20 addresses the owner, anywhere, got 429 for an hour."""
    make_risk_item(holder_email=holder_email)
    owner, *others = addresses(25)
    device = (await log_in(ps_client, ps_services, mailbox, holder_email, owner))["device_token"]
    assert device

    statuses = [(await request(ps_client, holder_email, address)).status_code for address in others[:20]]
    assert statuses == [200] * 19 + [429], "the ceiling: 20 codes an hour from all addresses"

    attacker = await request(ps_client, holder_email, others[20])
    assert attacker.status_code == 429 and attacker.json["error"]["code"] == "OTP_RATE_LIMITED"
    other_holder = f"other-{holder_email}"
    make_risk_item(holder_email=other_holder)
    foreign = (await log_in(ps_client, ps_services, mailbox, other_holder, others[21]))["device_token"]
    assert (await request(ps_client, holder_email, others[22], foreign)).status_code == 429, \
        "another e-mail's device token exempts nothing"
    assert (await request(ps_client, holder_email, others[22], device[:-2] + "xx")).status_code == 429

    elsewhere = others[23]  # the owner, travelling: a fresh address, the device token
    data = await log_in(ps_client, ps_services, mailbox, holder_email, elsewhere, device)
    assert data["access_token"] and data["device_token"] and data["device_token_expires_in"] > 0


async def test_the_owner_with_a_device_token_verifies_past_the_failure_ceiling(
        ps_client, ps_services, mailbox, make_risk_item, holder_email):
    """50 wrong guesses from 10 addresses stop every verification of the e-mail for an hour, but
    the owner's device."""
    make_risk_item(holder_email=holder_email)
    owner, fresh, *guessers = addresses(12)
    device = (await log_in(ps_client, ps_services, mailbox, holder_email, owner))["device_token"]
    for address in guessers:
        assert (await request(ps_client, holder_email, address)).status_code == 200
        guesses = [(await verify(ps_client, holder_email, "000000", address)).status_code for _ in range(5)]
        assert guesses == [401] * 5 or 200 not in guesses

    before = len(mailbox.to(holder_email))
    assert (await request(ps_client, holder_email, fresh, device)).status_code == 200
    code = await mailed_code(ps_services, mailbox, holder_email, before)
    refused = await verify(ps_client, holder_email, code, fresh)
    assert refused.status_code == 429 and refused.json["error"]["code"] == "OTP_ATTEMPTS_EXHAUSTED", \
        "without the device token the ceiling holds, right code or not"
    verified = await verify(ps_client, holder_email, code, fresh, device)
    assert verified.status_code == 200, verified.text


async def test_a_device_token_never_lifts_the_limits_of_its_address(ps_client, ps_services, mailbox,
                                                                   make_risk_item, holder_email):
    make_risk_item(holder_email=holder_email)
    address, other = addresses(2)
    device = (await log_in(ps_client, ps_services, mailbox, holder_email, address))["device_token"]
    again = await request(ps_client, holder_email, address, device)
    assert again.status_code == 429 and again.json["error"]["code"] == "OTP_COOLDOWN"
    assert (await request(ps_client, holder_email, other, device)).status_code == 200
    wrong = [(await verify(ps_client, holder_email, "000000", other, device)).status_code for _ in range(6)]
    assert wrong == [401] * 5 + [429], "the code's own attempts are the (e-mail, address)'s, device or not"


async def test_the_device_token_is_documented_in_the_holder_document(ps_client):
    document = (await ps_client.simulate_get("/openapi/holder.json")).json
    verify_op = document["paths"][VERIFY]["post"]
    request_op = document["paths"][REQUEST]["post"]
    token = document["components"]["schemas"]["PostsalesToken"]
    assert "device_token" in token["required"]
    for operation in (verify_op, request_op):
        [parameter] = [p for p in operation["parameters"]
                       if document["components"]["parameters"][p["$ref"].rsplit("/", 1)[1]]["name"] == "X-Device-Token"]
        assert parameter
