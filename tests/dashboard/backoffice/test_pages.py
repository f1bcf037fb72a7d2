"""The back-office pages over ASGI: the session gate, what each page shows, CSRF and origin
checks on its forms, and the audit row of a retry."""
from __future__ import annotations

import re

import orjson
import pytest

from app.dashboard.backoffice.resources import csrf_token

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def cookie(session) -> dict:
    return session["headers"]


async def get(client, session, path: str):
    return await client.simulate_get(path, headers=cookie(session))


@pytest.mark.parametrize("path", ["/backoffice/emissions", "/backoffice/emissions/1",
                                  "/backoffice/outbox", "/backoffice/audit", "/backoffice/risk-items/1"])
async def test_without_a_session_every_page_goes_to_the_login(client, path):
    resp = await client.simulate_get(path)
    assert resp.status_code == 303
    assert resp.headers["location"].startswith("/backoffice/login")


async def test_the_login_page_is_a_form_with_no_outside_asset(client):
    resp = await client.simulate_get("/backoffice/login", query_string="next=%2Fbackoffice%2Faudit")
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/html")
    html = resp.text
    assert 'action="/api/auth/login"' in html and 'data-next="/backoffice/audit"' in html
    assert '<label for="email">' in html and '<label for="password">' in html
    assert not re.search(r'(src|href)="(https?:)?//', html), "every asset ships in the package"
    for asset in re.findall(r'(?:src|href)="(/backoffice/static/[^"]+)"', html):
        assert (await client.simulate_get(asset)).status_code == 200


async def test_the_login_page_never_sends_elsewhere_after_login(client):
    resp = await client.simulate_get("/backoffice/login", query_string="next=https%3A%2F%2Fevil.example")
    assert 'data-next="/backoffice/emissions"' in resp.text


async def test_emissions_filter_by_status_and_link_to_the_risk_item(client, session, make_risk_item, make_emission):
    item = make_risk_item()
    abandoned = make_emission(item["id"], status="ABANDONED", provider="PROVIDER_B", event="SALES_DISPATCH")
    failed = make_emission(item["id"], status="FAILED", provider="PROVIDER_B", event="POLICY_CREATED")
    resp = await client.simulate_get("/backoffice/emissions", headers=cookie(session),
                                     query_string="status=ABANDONED&provider=PROVIDER_B")
    assert resp.status_code == 200
    assert f'href="/backoffice/emissions/{abandoned["id"]}"' in resp.text
    assert f'href="/backoffice/emissions/{failed["id"]}"' not in resp.text
    assert f'href="/backoffice/risk-items/{item["id"]}"' in resp.text
    resp = await client.simulate_get("/backoffice/emissions", headers=cookie(session),
                                     query_string="event=POLICY_CREATED&provider=PROVIDER_B")
    assert f'href="/backoffice/emissions/{failed["id"]}"' in resp.text
    assert f'href="/backoffice/emissions/{abandoned["id"]}"' not in resp.text


async def test_a_bad_filter_is_a_400_that_changes_nothing(client, session):
    resp = await client.simulate_get("/backoffice/emissions", headers=cookie(session), query_string="status=LOST")
    assert resp.status_code == 400
    [problem] = resp.json["error"]["details"]  # the one shape: [{field, message}]
    assert problem["field"] == "status" and problem["message"].startswith("status must be")
    resp = await client.simulate_get("/backoffice/emissions", headers=cookie(session), query_string="since=yesterday")
    assert resp.status_code == 400


async def test_the_detail_shows_attempts_next_retry_and_the_masked_payload(client, session, make_risk_item,
                                                                           make_emission):
    item = make_risk_item()
    em = make_emission(item["id"], status="FAILED", attempts=2, errors=[
        {"at": "2026-11-22T10:00:00Z", "attempt": 2, "code": "PROVIDER_UNAVAILABLE", "message": "503 <b>down</b>",
         "httpStatus": 503, "requestPayload": {"headers": {"X-Api-Key": "***"}, "body": {"policy": "P-1"}}}])
    resp = await get(client, session, f"/backoffice/emissions/{em['id']}")
    assert resp.status_code == 200
    html = resp.text
    assert "PROVIDER_UNAVAILABLE" in html and "HTTP 503" in html and "(secrets masked)" in html
    assert "&#34;X-Api-Key&#34;: &#34;***&#34;" in html or "&quot;X-Api-Key&quot;: &quot;***&quot;" in html
    assert "503 &lt;b&gt;down&lt;/b&gt;" in html, "provider text is escaped"
    assert str(item["uid"]) in html and "Retry this emission" in html
    assert (await get(client, session, "/backoffice/emissions/999999999999")).status_code == 404
    assert (await get(client, session, "/backoffice/emissions/abc")).status_code == 404


async def retry(client, session, ids, csrf=None, origin=None, next_path="/backoffice/emissions"):
    body = "&".join([f"id={i}" for i in ids] + [f"csrf={csrf if csrf is not None else csrf_token(session['token'])}",
                                                f"next={next_path}"])
    headers = {**cookie(session), **FORM, **({"Origin": origin} if origin else {})}
    return await client.simulate_post("/backoffice/emissions/retry", body=body, headers=headers)


async def test_a_retry_needs_the_csrf_token_and_the_same_origin(client, session, make_risk_item, make_emission, admin):
    em = make_emission(make_risk_item()["id"], status="ABANDONED")
    assert (await retry(client, session, [em["id"]], csrf="forged")).status_code == 403
    assert (await retry(client, session, [em["id"]], csrf="%C3%8D")).status_code == 403  # not ASCII: still a 403
    assert (await retry(client, session, [em["id"]], origin="https://evil.example")).status_code == 403
    assert admin.execute("SELECT status FROM insurance.integration_emissions WHERE id = %s",
                         (em["id"],)).fetchone()["status"] == "ABANDONED", "a refused retry changes nothing"


async def test_a_retry_restarts_the_emission_and_writes_the_audit_row(client, session, make_risk_item, make_emission,
                                                                      admin):
    em = make_emission(make_risk_item()["id"], status="ABANDONED")
    resp = await retry(client, session, [em["id"]], origin="http://127.0.0.1:8000",
                       next_path=f"/backoffice/emissions/{em['id']}")
    assert resp.status_code == 303, resp.text
    assert resp.headers["location"].startswith(f"/backoffice/emissions/{em['id']}?notice=")
    row = admin.execute("SELECT status, attempts FROM insurance.integration_emissions WHERE id = %s",
                        (em["id"],)).fetchone()
    assert row == {"status": "FAILED", "attempts": 0}
    audit = admin.execute("SELECT * FROM insurance.audit_log WHERE action = 'emissions.retry' AND targets = %s",
                          (orjson.dumps([em["id"]]).decode(),)).fetchone()
    assert audit["actor"] == f"dashboard:{session['email']}" and audit["details"]["via"] == "backoffice"
    page = await get(client, session, "/backoffice/audit")
    assert f"dashboard:{session['email']}" in page.text and "emissions.retry" in page.text


async def test_the_outbox_lists_pending_rows_and_brings_them_forward(client, session, admin):
    row = admin.execute("SELECT outbox.http_post('https://hooks.example.com/T/SECRET', '{}', '{}', "
                        "now() + interval '1 day') AS id").fetchone()
    page = await get(client, session, "/backoffice/outbox")
    assert page.status_code == 200
    if f"<td>{row['id']}</td>" in page.text:  # on the first page (older rows may fill it)
        assert "SECRET" not in page.text
    body = f"id={row['id']}&csrf={csrf_token(session['token'])}"
    resp = await client.simulate_post("/backoffice/outbox/retry", body=body, headers={**cookie(session), **FORM})
    assert resp.status_code == 303
    due = admin.execute("SELECT deliver_after <= now() AS due FROM outbox.http_requests WHERE id = %s",
                        (row["id"],)).fetchone()["due"]
    admin.execute("UPDATE outbox.http_requests SET delivered_at = now() WHERE id = %s", (row["id"],))
    assert due


async def test_dead_letters_are_listed_apart_and_revived(client, session, admin):
    row = admin.execute("SELECT outbox.http_post('/api/integrations/retry', '{\"emissionId\": 1}', '{}', now()) AS id"
                        ).fetchone()
    admin.execute("UPDATE outbox.http_requests SET dead_at = now(), attempts = 20 WHERE id = %s", (row["id"],))
    try:
        dead = await client.simulate_get("/backoffice/outbox", headers=cookie(session), query_string="state=dead")
        assert f"<td>{row['id']}</td>" in dead.text and "Dead letters" in dead.text
        body = f"id={row['id']}&csrf={csrf_token(session['token'])}&next=/backoffice/outbox?state=dead"
        resp = await client.simulate_post("/backoffice/outbox/retry", body=body, headers={**cookie(session), **FORM})
        assert resp.status_code == 303
        assert resp.headers["location"] == "/backoffice/outbox?state=dead&notice=outbox-due&done=1&of=1"
        shown = await client.simulate_get("/backoffice/outbox", headers=cookie(session),
                                          query_string="state=dead&notice=outbox-due&done=1&of=1")
        assert "1 of 1 outbox row due now." in shown.text
        assert admin.execute("SELECT dead_at, attempts FROM outbox.http_requests WHERE id = %s",
                             (row["id"],)).fetchone() == {"dead_at": None, "attempts": 0}
    finally:
        admin.execute("UPDATE outbox.http_requests SET delivered_at = now() WHERE id = %s", (row["id"],))


@pytest.mark.parametrize("next_path", [
    "/backoffice/emissions%0D%0ASet-Cookie:%20x=1",     # CR/LF: a header split, once a 500
    "/backoffice/emissions?q=%E2%82%AC",                # outside Latin-1: once a 500
    "/backoffice/emissions?q=%C3%A9",                   # Latin-1 but not ASCII
])
async def test_a_retry_redirects_to_an_encoded_local_path_whatever_next_holds(
        client, session, make_risk_item, make_emission, next_path):
    em = make_emission(make_risk_item()["id"], status="ABANDONED")
    resp = await retry(client, session, [em["id"]], next_path=next_path)
    assert resp.status_code == 303, resp.text
    location = resp.headers["location"]
    assert location.startswith("/backoffice/emissions") and location.isascii()
    assert "\r" not in location and "\n" not in location and " " not in location


@pytest.mark.parametrize("next_value", ["%2Fbackoffice%0D%0Ax", "%2Fbackoffice%2F%E2%82%AC", "%2F%2Fevil.example",
                                        "%2Fbackoffice%5C..%5Cx"])
async def test_the_login_page_keeps_next_local_and_encoded(client, session, next_value):
    resp = await client.simulate_get("/backoffice/login", query_string=f"next={next_value}", headers=cookie(session))
    assert resp.status_code == 303, resp.text  # logged in already: straight there
    location = resp.headers["location"]
    assert location.startswith("/backoffice") and location.isascii() and "\\" not in location
    assert "\r" not in location and "\n" not in location


async def test_notice_shows_known_messages_only(client, session):
    injected = await client.simulate_get("/backoffice/outbox", headers=cookie(session),
                                         query_string="notice=Your%20account%20is%20locked%3A%20call%20555-0100")
    assert injected.status_code == 200 and "555-0100" not in injected.text
    assert 'role="status"' not in injected.text
    known = await client.simulate_get("/backoffice/emissions", headers=cookie(session),
                                      query_string="notice=emissions-retried&done=2&of=3")
    assert "Retry queued for 2 of 3 emissions." in known.text
    bad_count = await client.simulate_get("/backoffice/emissions", headers=cookie(session),
                                          query_string="notice=emissions-retried&done=2%3Cb%3E&of=3")
    assert bad_count.status_code == 200 and 'role="status"' not in bad_count.text


@pytest.mark.parametrize("path", ["/backoffice/nope", "/backoffice/emissions/1/extra", "/backoffice/risk-item/1"])
async def test_an_unknown_page_answers_the_html_not_found_page(client, session, path):
    """Issue 21: an operator's mistyped address showed the API's raw JSON in the browser."""
    for headers in (cookie(session), {}):
        resp = await client.simulate_get(path, headers=headers)
        assert resp.status_code == 404 and resp.headers["content-type"].startswith("text/html"), resp.text
        assert "was not found" in resp.text
    assert session["email"] in (await get(client, session, path)).text, "with the navigation of a live session"
