"""Lockouts that cannot be aimed (issue 19): failed logins count per (account, address), so an
address that guesses locks itself out of that account, not the owner elsewhere; an account-wide
ceiling (100 failures in 15 minutes, counted in a metric and an audit row) still stops guessing
spread over many addresses."""
from __future__ import annotations

import random

from tests.dashboard.conftest import login

CEILING = 100


def an_address() -> str:
    return f"198.51.{random.randrange(100, 200)}.{random.randrange(1, 255)}"


async def test_an_address_that_guesses_locks_itself_out_not_the_owner(client, make_user):
    """On main: 12 wrong passwords from one address locked the owner out everywhere."""
    user = make_user()
    attacker, owner = an_address(), "203.0.113.90"
    statuses = [(await login(client, user["email"], f"wrong-{i}", remote_addr=attacker)).status_code
                for i in range(12)]
    assert statuses == [401] * 5 + [429] * 7
    assert (await login(client, user["email"], remote_addr=attacker)).status_code == 429, \
        "the guessing address stays locked out of this account, right password or not"
    assert (await login(client, user["email"], remote_addr=owner)).status_code == 200, \
        "the owner at another address logs in"


async def test_the_account_ceiling_stops_guessing_spread_over_many_addresses(client, make_user, admin):
    user = make_user()
    addresses = [f"192.0.2.{i}" for i in range(1, CEILING // 4 + 1)]  # 25 addresses, 4 guesses each
    for address in addresses:
        for i in range(4):
            assert (await login(client, user["email"], f"wrong-{i}", remote_addr=address)).status_code == 401
    refused = await login(client, user["email"], "wrong", remote_addr="192.0.2.200")
    assert refused.status_code == 429 and refused.json["error"]["code"] == "RATE_LIMITED"
    assert (await login(client, user["email"], remote_addr="192.0.2.201")).status_code == 429, \
        "past the ceiling the account waits for its window, whoever asks"
    other = make_user()
    assert (await login(client, other["email"], remote_addr="192.0.2.202")).status_code == 200
    audit = admin.execute("SELECT actor, targets, result, details FROM insurance.audit_log "
                          "WHERE action = 'limits.account_ceiling' AND targets = jsonb_build_array(%s::text)",
                          (user["email"],)).fetchall()
    assert len(audit) == 1, "one audit row per window, not one per refusal"
    assert audit[0]["details"]["kind"] == "dashboard_login" and audit[0]["details"]["limit"] == CEILING
    metrics = (await client.simulate_get("/metrics")).text
    assert 'insurance_account_ceiling_trips_total{kind="dashboard_login"}' in metrics


async def test_a_success_clears_its_own_address_counter_only(client, make_user, admin):
    user = make_user()
    for _ in range(4):
        await login(client, user["email"], "nope", remote_addr="203.0.113.91")
    assert (await login(client, user["email"], remote_addr="203.0.113.91")).status_code == 200
    keys = {r["key"]: r["failures"] for r in admin.execute(
        "SELECT key, failures FROM insurance.dashboard_login_failures WHERE key LIKE %s",
        (f"%{user['email']}%",))}
    assert f"email+ip:{user['email']}|203.0.113.91" not in keys
    assert keys.get(f"email:{user['email']}") == 4, "the account's ceiling keeps the failures"
