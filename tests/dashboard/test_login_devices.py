"""Device cookies for operators (issue 31, OWASP device cookies): a successful login sets the
HttpOnly cookie `device`; a login for the same account that carries it is exempt from the
account's ceiling (100 failures in 15 minutes from all addresses), never from the (e-mail,
address) limit. Disabling the user, a new password and ended sessions void it. Addresses reach
the app as a trusted proxy names them (X-Forwarded-For from 127.0.0.1)."""
from __future__ import annotations

import itertools
import random

import pytest

from tests.dashboard.conftest import _hasher, login

PROXY = "127.0.0.1"
CEILING = 100


# Client addresses of this run, never reused (100.64.0.0/10, from a random start): one address's
# counters are never another test's.
_NEXT = itertools.count(random.randrange(1 << 21))


def addresses(n: int) -> list[str]:
    return [f"100.{64 + (k >> 16) % 64}.{(k >> 8) & 255}.{k & 255}" for k in (next(_NEXT) for _ in range(n))]


async def log_in(client, email: str, address: str, password: str | None = None, device: str | None = None):
    headers = {"X-Forwarded-For": address, **({"Cookie": f"device={device}"} if device else {})}
    kwargs = {} if password is None else {"password": password}
    return await login(client, email, remote_addr=PROXY, headers=headers, **kwargs)


async def trip_the_ceiling(client, email: str) -> None:
    """5 wrong passwords from each of 20 addresses: the account's 100 failures (an earlier
    success of the owner left one attempt counted: the last guess may meet the ceiling)."""
    statuses = [(await log_in(client, email, address, f"wrong-{i}")).status_code
                for address in addresses(CEILING // 5) for i in range(5)]
    assert statuses.count(401) >= CEILING - 1 and set(statuses) <= {401, 429}, statuses
    refused = await log_in(client, email, addresses(1)[0])
    assert refused.status_code == 429 and refused.json["error"]["code"] == "RATE_LIMITED", \
        "the right password from a fresh address without the device cookie: the ceiling"


def device_cookie(resp) -> str:
    cookie = resp.cookies["device"]
    assert cookie.http_only and cookie.path == "/api/auth/login" and cookie.max_age > 0
    return cookie.value


async def test_the_owner_with_a_device_cookie_logs_in_while_20_addresses_hold_the_ceiling(client, make_user):
    """On main: 5 wrong passwords from each of 20 addresses locked the owner out everywhere."""
    user = make_user()
    first = await log_in(client, user["email"], addresses(1)[0])
    assert first.status_code == 200, first.text
    device = device_cookie(first)
    await trip_the_ceiling(client, user["email"])

    owner = await log_in(client, user["email"], addresses(1)[0], device=device)
    assert owner.status_code == 200, owner.text
    assert device_cookie(owner) != device, "each login gives a fresh device token"
    other = make_user()
    foreign = device_cookie(await log_in(client, other["email"], addresses(1)[0]))
    assert (await log_in(client, user["email"], addresses(1)[0], device=foreign)).status_code == 429, \
        "another account's device cookie exempts nothing"
    assert (await log_in(client, user["email"], addresses(1)[0], device=device[:-2] + "xx")).status_code == 429


async def test_a_device_cookie_never_lifts_the_limit_of_its_address(client, make_user):
    user = make_user()
    [address] = addresses(1)
    device = device_cookie(await log_in(client, user["email"], address))
    statuses = [(await log_in(client, user["email"], address, f"wrong-{i}", device=device)).status_code
                for i in range(5)]
    assert statuses == [401] * 5
    assert (await log_in(client, user["email"], address, device=device)).status_code == 429


def disable(admin, email: str) -> str | None:
    admin.execute("SELECT admin.disable_dashboard_user('test', %s)", (email,))
    admin.execute("SELECT admin.enable_dashboard_user('test', %s)", (email,))
    return None


def new_password(admin, email: str) -> str | None:
    password = "a brand new passphrase"
    admin.execute("SELECT admin.set_dashboard_password('test', %s, %s)", (email, _hasher.hash(password)))
    return password


def end_sessions(admin, email: str) -> str | None:
    admin.execute("SELECT admin.end_dashboard_sessions('test', %s, NULL)", (email,))
    return None


@pytest.mark.parametrize("change", [disable, new_password, end_sessions])
async def test_disable_password_change_and_ended_sessions_void_device_cookies(client, make_user, admin, change):
    user = make_user()
    device = device_cookie(await log_in(client, user["email"], addresses(1)[0]))
    password = change(admin, user["email"])
    await trip_the_ceiling(client, user["email"])
    stale = await log_in(client, user["email"], addresses(1)[0], password, device=device)
    assert stale.status_code == 429, f"the device cookie outlived {change.__name__}: {stale.text}"
