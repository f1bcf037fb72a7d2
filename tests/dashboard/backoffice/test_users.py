"""Issue 30, item 2: people from the page. /backoffice/users lists the back-office users and
disables, enables and ends their sessions; every form needs the CSRF token and a same-origin
post, and every change is audited as the session's user, via backoffice."""
from __future__ import annotations

import re

import pytest

from app.dashboard.backoffice.resources import csrf_token
from tests.dashboard.conftest import PASSWORD, login

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
LIST = "/api/trpc/integrationEmissions.list"


async def act(client, session, action: str, email: str, csrf: str | None = None, origin: str | None = None,
              confirm: bool = True):
    """The action's form posted; `confirm`: as the confirmation page posts it (confirm=yes)."""
    body = f"email={email}&csrf={csrf if csrf is not None else csrf_token(session['token'])}"
    body += "&confirm=yes" if confirm else ""
    headers = {**session["headers"], **FORM, **({"Origin": origin} if origin else {})}
    return await client.simulate_post(f"/backoffice/users/{action}", body=body, headers=headers)


async def logged_in(client, user: dict) -> dict:
    resp = await login(client, user["email"], user["password"])
    assert resp.status_code == 200, resp.text
    return {"Cookie": f"dashboard_session={resp.cookies['dashboard_session'].value}"}


def audit(admin, action: str, email: str) -> dict:
    return admin.execute("SELECT actor, via, targets, result, details FROM insurance.audit_log "
                         "WHERE action = %s AND targets = to_jsonb(ARRAY[%s::text]) ORDER BY id DESC LIMIT 1",
                         (action, email)).fetchone()


def row_of(html: str, email: str) -> str:
    return re.search(rf'<tr data-user="{re.escape(email)}">.*?</tr>', html, re.DOTALL).group()


async def test_the_users_page_lists_every_user_with_its_state_and_live_sessions(client, session, make_user):
    idle, gone = make_user(), make_user(active=False)
    page = await client.simulate_get("/backoffice/users", headers=session["headers"])
    assert page.status_code == 200, page.text
    assert 'href="/backoffice/users" aria-current="page"' in page.text, "in the navigation"
    mine = row_of(page.text, session["email"])
    assert "active" in mine and "(you)" in mine and "<td>1</td>" in mine
    assert "active" in row_of(page.text, idle["email"]) and "Disable" in row_of(page.text, idle["email"])
    assert "disabled" in row_of(page.text, gone["email"]) and "Enable" in row_of(page.text, gone["email"])
    assert "argon2" not in page.text


@pytest.mark.parametrize("action", ["disable", "enable", "end-sessions"])
async def test_a_user_change_needs_the_csrf_token_and_the_same_origin(client, session, make_user, admin, action):
    other = make_user(active=action != "enable")
    before = admin.execute("SELECT active FROM insurance.dashboard_users WHERE email = %s", (other["email"],)).fetchone()
    assert (await act(client, session, action, other["email"], csrf="forged")).status_code == 403
    assert (await act(client, session, action, other["email"], origin="https://evil.example")).status_code == 403
    assert admin.execute("SELECT active FROM insurance.dashboard_users WHERE email = %s",
                         (other["email"],)).fetchone() == before, "a refused form changes nothing"


async def test_disable_from_the_page_ends_their_sessions_and_is_audited_via_backoffice(client, session, make_user,
                                                                                      admin):
    other = make_user()
    their_cookie = await logged_in(client, other)
    resp = await act(client, session, "disable", other["email"], origin="http://127.0.0.1:8000")
    assert resp.status_code == 303, resp.text
    assert resp.headers["location"] == "/backoffice/users?notice=user-disabled&done=1&of=1"
    assert (await client.simulate_get(LIST, headers=their_cookie)).status_code == 401, "their cookie stops at once"
    refused = await login(client, other["email"], PASSWORD)
    assert refused.status_code == 403 and refused.json["error"]["code"] == "ACCOUNT_DISABLED"
    row = audit(admin, "users.disable", other["email"])
    assert row["actor"] == f"dashboard:{session['email']}" and row["via"] == "backoffice" and row["result"] == "ok"
    shown = await client.simulate_get("/backoffice/users", headers=session["headers"],
                                      query_string="notice=user-disabled&done=1&of=1")
    assert "User disabled; 1 live session ended." in shown.text
    assert "disabled" in row_of(shown.text, other["email"])

    resp = await act(client, session, "enable", other["email"])
    assert resp.status_code == 303
    assert (await login(client, other["email"], PASSWORD)).status_code == 200
    assert audit(admin, "users.enable", other["email"])["via"] == "backoffice"


async def test_end_sessions_from_the_page(client, session, make_user, admin):
    other = make_user()
    cookies = [await logged_in(client, other), await logged_in(client, other)]
    resp = await act(client, session, "end-sessions", other["email"])
    assert resp.status_code == 303 and "notice=sessions-ended&done=2" in resp.headers["location"]
    for cookie in cookies:
        assert (await client.simulate_get(LIST, headers=cookie)).status_code == 401
    assert (await login(client, other["email"], PASSWORD)).status_code == 200, "they may log in again"
    row = audit(admin, "users.end_sessions", other["email"])
    assert row["via"] == "backoffice" and row["details"]["sessionsEnded"] == 2


async def test_an_unknown_user_or_action_changes_nothing(client, session, admin):
    resp = await act(client, session, "disable", "nobody-at-all@insurance.invalid")
    assert resp.status_code == 404
    assert audit(admin, "users.disable", "nobody-at-all@insurance.invalid")["result"] == "USER_NOT_FOUND"
    assert (await act(client, session, "delete", session["email"])).status_code == 404
    assert (await act(client, session, "disable", "not an e-mail")).status_code == 400


def active(admin, email: str) -> bool:
    return admin.execute("SELECT active FROM insurance.dashboard_users WHERE email = %s", (email,)).fetchone()["active"]


@pytest.mark.parametrize("action, asks", [("disable", "Disable"), ("end-sessions", "End the sessions of")])
async def test_disable_and_end_sessions_ask_first_without_any_script(client, session, make_user, admin, action, asks):
    """Issue 42: one click disabled an account. The button now leads to a confirmation page (a
    plain form: it works without JavaScript); only its "Yes" acts."""
    other = make_user()
    their_cookie = await logged_in(client, other)
    asked = await act(client, session, action, other["email"], confirm=False)
    assert asked.status_code == 200, asked.text
    assert f"<h1>{asks} {other['email']}?</h1>" in asked.text
    form = re.search(r'<form method="post" action="/backoffice/users/' + action + r'" data-confirm>.*?</form>',
                     asked.text, re.DOTALL).group()
    assert 'name="confirm" value="yes"' in form and f'value="{other["email"]}"' in form and "Yes, " in form
    assert 'href="/backoffice/users">Cancel</a>' in form
    assert active(admin, other["email"]) and (await client.simulate_get(LIST, headers=their_cookie)).status_code == 200, \
        "asking changes nothing"
    assert audit(admin, f"users.{action.replace('-', '_')}", other["email"]) is None, "and records nothing"
    done = await act(client, session, action, other["email"])  # the confirmation page's form
    assert done.status_code == 303
    assert (await client.simulate_get(LIST, headers=their_cookie)).status_code == 401


async def test_an_operator_cannot_disable_their_own_account(client, session, admin):
    """Issue 42: an operator disabled their own account in one click; with one operator only the
    command line could undo it. The page offers no Disable on their own row, and refuses the form."""
    page = await client.simulate_get("/backoffice/users", headers=session["headers"])
    assert "Disable" not in row_of(page.text, session["email"]) and "(you)" in row_of(page.text, session["email"])
    refused = await act(client, session, "disable", session["email"].upper())
    assert refused.status_code == 303 and "notice=user-own-account" in refused.headers["location"]
    assert active(admin, session["email"])
    assert audit(admin, "users.disable", session["email"])["result"] == "OWN_ACCOUNT"
    shown = await client.simulate_get("/backoffice/users", headers=session["headers"],
                                      query_string=refused.headers["location"].split("?", 1)[1])
    assert shown.status_code == 200, "still logged in"
    assert '<p class="notice notice-refused" role="status">You cannot disable your own account' in shown.text
