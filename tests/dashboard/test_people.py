"""People (issue 21): `users disable | enable | password | sessions`, run as an operator would.
A disabled user's cookie is refused by the back-office and tRPC at its very next request, their
login is refused, and each change leaves an audit row (via cli, the OS user as actor)."""
from __future__ import annotations

import getpass
import json

from tests.dashboard.conftest import PASSWORD, login
from tests.dashboard.test_commands import cli

LIST = "/api/trpc/integrationEmissions.list"


async def logged_in(client, user) -> dict:
    resp = await login(client, user["email"], user.get("password", PASSWORD))
    assert resp.status_code == 200, resp.text
    return {"Cookie": f"dashboard_session={resp.cookies['dashboard_session'].value}"}


def audit(admin, action: str, email: str) -> dict:
    return admin.execute("SELECT actor, targets, result, via, on_behalf_of FROM insurance.audit_log "
                         "WHERE action = %s AND targets ? %s ORDER BY id DESC LIMIT 1", (action, email)).fetchone()


async def test_disable_ends_every_session_at_once_and_refuses_login(client, admin, make_user):
    user = make_user()
    first, second = await logged_in(client, user), await logged_in(client, user)
    assert (await client.simulate_get(LIST, headers=first)).status_code == 200
    assert (await client.simulate_get("/backoffice/emissions", headers=second)).status_code == 200

    done = cli("users", "disable", "--email", user["email"], "--actor", "TICKET-42", stdin="")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"email": user["email"], "active": False, "sessionsEnded": 2}
    assert (await client.simulate_get(LIST, headers=first)).status_code == 401, "tRPC refuses the cookie"
    page = await client.simulate_get("/backoffice/emissions", headers=second)
    assert page.status_code == 303 and page.headers["location"].startswith("/backoffice/login")
    refused = await login(client, user["email"], PASSWORD)
    assert refused.status_code == 403 and refused.json["error"]["code"] == "ACCOUNT_DISABLED"
    row = audit(admin, "users.disable", user["email"])
    assert row == {"actor": f"cli:{getpass.getuser()}", "targets": [user["email"]], "result": "ok",
                   "via": "cli", "on_behalf_of": "TICKET-42"}

    done = cli("users", "enable", "--email", user["email"], stdin="")
    assert done.returncode == 0 and json.loads(done.stdout) == {"email": user["email"], "active": True}
    assert (await client.simulate_get(LIST, headers=first)).status_code == 401, "old sessions stay ended"
    assert (await login(client, user["email"], PASSWORD)).status_code == 200
    assert audit(admin, "users.enable", user["email"])["result"] == "ok"


async def test_a_new_password_ends_the_sessions_and_the_old_one(client, admin, make_user):
    user = make_user()
    cookie = await logged_in(client, user)
    done = cli("users", "password", "--email", user["email"], stdin="a brand new passphrase\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"email": user["email"], "sessionsEnded": 1}
    assert (await client.simulate_get(LIST, headers=cookie)).status_code == 401
    assert (await login(client, user["email"], PASSWORD)).status_code == 401
    assert (await login(client, user["email"], "a brand new passphrase")).status_code == 200
    assert audit(admin, "users.password", user["email"])["result"] == "ok"
    short = cli("users", "password", "--email", user["email"], stdin="short\n")
    assert short.returncode == 2


async def test_sessions_are_listed_and_ended_one_by_one_or_all(client, admin, make_user):
    user = make_user()
    first, second, third = [await logged_in(client, user) for _ in range(3)]
    listed = cli("users", "sessions", "--email", user["email"], stdin="")
    assert listed.returncode == 0, listed.stderr
    sessions = json.loads(listed.stdout)
    assert len(sessions) == 3 and all(len(s["id"]) == 12 for s in sessions)
    assert {"id", "createdAt", "expiresAt", "ip", "userAgent"} <= set(sessions[0])
    token = first["Cookie"].split("=", 1)[1]
    import hashlib
    mine = hashlib.sha256(token.encode()).hexdigest()[:12]
    assert mine in {s["id"] for s in sessions}

    done = cli("users", "sessions", "--email", user["email"], "--end", mine, stdin="")
    assert done.returncode == 0 and json.loads(done.stdout) == {"email": user["email"], "sessionsEnded": 1}
    assert (await client.simulate_get(LIST, headers=first)).status_code == 401
    assert (await client.simulate_get(LIST, headers=second)).status_code == 200, "the others live on"
    done = cli("users", "sessions", "--email", user["email"], "--end-all", stdin="")
    assert json.loads(done.stdout) == {"email": user["email"], "sessionsEnded": 2}
    assert (await client.simulate_get(LIST, headers=third)).status_code == 401
    assert json.loads(cli("users", "sessions", "--email", user["email"], stdin="").stdout) == []
    assert audit(admin, "users.end_sessions", user["email"])["result"] == "ok"


def test_an_unknown_user_is_refused_and_the_refusal_recorded(admin):
    email = "nobody.at.all@insurance.invalid"
    for args in (["disable"], ["enable"], ["sessions", "--end-all"]):
        done = cli("users", *args, "--email", email, stdin="")
        assert done.returncode == 1 and "no dashboard user" in done.stderr, done.stderr
    assert audit(admin, "users.disable", email)["result"] == "USER_NOT_FOUND"
