"""Holder codes that cannot be aimed (issue 19): code requests and wrong guesses count per
(e-mail, address) and touch only that address's own codes, so one address exhausts its own
share, not the holder's at another address. (The e-mail-wide ceilings: tests/pgtap.)"""
from __future__ import annotations

import random

from tests.postsales.conftest import PREFIX, code_of

REQUEST = f"{PREFIX}/auth/otp/request"
VERIFY = f"{PREFIX}/auth/otp/verify"


def an_address() -> str:
    return f"198.18.{random.randrange(256)}.{random.randrange(1, 255)}"


async def test_requests_from_one_address_do_not_stop_the_holder_at_another(ps_client, ps_services, mailbox,
                                                                           make_risk_item, holder_email):
    """On main: 8 requests from one address kept the holder from getting any code for an hour."""
    make_risk_item(holder_email=holder_email)
    attacker, holder = an_address(), an_address()
    statuses = [(await ps_client.simulate_post(REQUEST, json={"email": holder_email}, remote_addr=attacker)).status_code
                for _ in range(8)]
    assert statuses == [200] + [429] * 7
    await ps_services.mailer.drain()
    assert len(mailbox.to(holder_email)) == 1, "the refused requests mailed nothing"

    resp = await ps_client.simulate_post(REQUEST, json={"email": holder_email}, remote_addr=holder)
    assert resp.status_code == 200, resp.text
    await ps_services.mailer.drain()
    code = code_of(mailbox.to(holder_email)[-1])
    verified = await ps_client.simulate_post(VERIFY, json={"email": holder_email, "otp": code}, remote_addr=holder)
    assert verified.status_code == 200, verified.text


async def test_wrong_guesses_from_one_address_do_not_burn_the_holders_code(ps_client, ps_services, mailbox,
                                                                           make_risk_item, holder_email):
    """On main: 5 wrong guesses from anywhere exhausted the holder's latest code."""
    make_risk_item(holder_email=holder_email)
    attacker, holder = an_address(), an_address()
    assert (await ps_client.simulate_post(REQUEST, json={"email": holder_email},
                                          remote_addr=holder)).status_code == 200
    code = code_of(await mailbox.wait_for(holder_email))
    wrong = f"{(int(code) + 1) % 1_000_000:06d}"
    # The attacker asks for a code of its own (mailed to the holder), then guesses.
    assert (await ps_client.simulate_post(REQUEST, json={"email": holder_email},
                                          remote_addr=attacker)).status_code == 200
    guesses = [(await ps_client.simulate_post(VERIFY, json={"email": holder_email, "otp": wrong},
                                              remote_addr=attacker)) for _ in range(7)]
    assert [g.status_code for g in guesses] == [401] * 5 + [429] * 2
    assert guesses[-1].json["error"]["code"] == "OTP_ATTEMPTS_EXHAUSTED"
    # Nor does the holder's own code answer at the attacker's address.
    assert (await ps_client.simulate_post(VERIFY, json={"email": holder_email, "otp": code},
                                          remote_addr=attacker)).status_code == 429
    verified = await ps_client.simulate_post(VERIFY, json={"email": holder_email, "otp": code}, remote_addr=holder)
    assert verified.status_code == 200, verified.text
