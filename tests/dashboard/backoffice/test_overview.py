"""Issue 30, item 1: live feedback on the emissions pages. A retried emission says "retry queued"
(not the FAILED it was given) and its page follows it; the list opens with a count per state
from the kept counts and filters by every state an emission passes through; "retry every row
that matches" asks first, is capped and is audited as one action; a last error that a later
attempt resolved says so."""
from __future__ import annotations

import re
import uuid

import pytest

from app.dashboard.backoffice import resources
from app.dashboard.backoffice.resources import csrf_token

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def provider() -> str:
    """A provider code of this test's own, so that the filters see only its rows."""
    return f"P{uuid.uuid4().hex[:12].upper()}"


async def get(client, session, path: str, query: str = ""):
    return await client.simulate_get(path, headers=session["headers"], query_string=query)


async def post(client, session, path: str, body: str):
    return await client.simulate_post(path, body=f"{body}&csrf={csrf_token(session['token'])}",
                                      headers={**session["headers"], **FORM})


def ids_listed(html: str) -> set[int]:
    return {int(i) for i in re.findall(r'<td><a href="/backoffice/emissions/(\d+)">', html)}


def badge_of(html: str, emission_id: int) -> str:
    row = re.search(rf'<td><a href="/backoffice/emissions/{emission_id}">.*?</tr>', html, re.DOTALL).group()
    return re.search(r'<span class="badge [^"]*">([^<]+)</span>', row).group(1)


def claim(admin, emission: dict, seconds: int = 60) -> None:
    admin.execute("""INSERT INTO insurance.emission_claims (risk_item_id, provider, event, claimed_by, lease_until)
                     VALUES (%s, %s, %s, 'a test worker', now() + make_interval(secs => %s))""",
                  (emission["risk_item_id"], emission["provider"], emission["event"], seconds))


async def test_a_retried_emission_says_retry_queued_and_its_page_follows_it(client, session, make_risk_item,
                                                                            make_emission, admin):
    em = make_emission(make_risk_item()["id"], status="ABANDONED", attempts=3)
    resp = await post(client, session, "/backoffice/emissions/retry", f"id={em['id']}&next=/backoffice/emissions/{em['id']}")
    assert resp.status_code == 303
    page = await get(client, session, f"/backoffice/emissions/{em['id']}")
    assert re.search(r"<h1>Emission \d+ <span data-badge><span class=\"badge badge-retry_queued\">RETRY QUEUED</span>", page.text)
    assert '<dd data-status aria-live="polite">RETRY QUEUED</dd>' in page.text, "not the FAILED it was given"
    assert f'data-follow="/backoffice/emissions/{em["id"]}/live" data-settled="false"' in page.text
    assert "Retry this emission" not in page.text, "a queued retry is not offered again"
    live = await get(client, session, f"/backoffice/emissions/{em['id']}/live")
    assert live.status_code == 200 and live.headers["cache-control"] == "no-store"
    assert live.json == {"id": em["id"], "state": "RETRY_QUEUED", "label": "RETRY QUEUED", "status": "FAILED",
                         "attempts": 0, "settled": False}

    claim(admin, em)  # a worker takes it
    live = await get(client, session, f"/backoffice/emissions/{em['id']}/live")
    assert live.json["state"] == "IN_PROGRESS" and live.json["label"] == "IN PROGRESS" and not live.json["settled"]

    admin.execute("DELETE FROM insurance.emission_claims WHERE risk_item_id = %s", (em["risk_item_id"],))
    admin.execute("UPDATE insurance.integration_emissions SET status = 'SUCCESS', next_retry_at = NULL, attempts = 1,"
                  " external_id = 'EXT-9' WHERE id = %s", (em["id"],))
    live = await get(client, session, f"/backoffice/emissions/{em['id']}/live")
    assert live.json["state"] == "SUCCESS" and live.json["settled"] is True
    page = await get(client, session, f"/backoffice/emissions/{em['id']}")
    assert 'data-settled="true"' in page.text
    assert (await get(client, session, "/backoffice/emissions/999999999999/live")).status_code == 404
    assert (await client.simulate_get(f"/backoffice/emissions/{em['id']}/live")).status_code == 303, "session only"


async def test_the_list_filters_by_every_state_each_emission_in_one(client, session, make_risk_item,
                                                                                make_emission, admin):
    code = provider()
    item = make_risk_item()
    made = {status: make_emission(item["id"], status=status, provider=code, event=f"E_{status}")
            for status in ("FAILED", "ABANDONED", "SUCCESS")}
    made["RETRY_QUEUED"] = make_emission(item["id"], status="FAILED", provider=code, event="E_RETRY_QUEUED")
    admin.execute("UPDATE insurance.integration_emissions SET next_retry_at = now() - interval '1 minute' WHERE id = %s",
                  (made["RETRY_QUEUED"]["id"],))
    made["IN_PROGRESS"] = make_emission(item["id"], status="FAILED", provider=code, event="E_IN_PROGRESS")
    admin.execute("UPDATE insurance.integration_emissions SET next_retry_at = now() - interval '1 minute' WHERE id = %s",
                  (made["IN_PROGRESS"]["id"],))
    claim(admin, made["IN_PROGRESS"])
    page = await get(client, session, "/backoffice/emissions", f"provider={code}")
    for state in resources.STATUSES:
        assert f'<option value="{state}"' in page.text, f"a filter for {state}"
    assert {badge_of(page.text, e["id"]) for e in made.values()} == {
        "FAILED", "ABANDONED", "SUCCESS", "RETRY QUEUED", "IN PROGRESS"}
    for state, em in made.items():
        listed = ids_listed((await get(client, session, "/backoffice/emissions", f"provider={code}&status={state}")).text)
        # One state per emission: FAILED no longer lists the queued and in-progress ones too.
        assert listed == {em["id"]}, state


async def test_the_page_opens_with_the_counts_per_state_from_the_kept_counts(client, session, admin):
    """The counts come from insurance.emission_counts (folded deltas), not from counting the
    table: a delta with no row behind it moves them."""
    def shown(html: str) -> dict[str, int]:
        return {state: int(n) for state, n in re.findall(
            r'data-count="([A-Z_]+)">\s*<span[^>]*>[^<]*</span> <strong>(\d+)</strong>', html)}
    before = shown((await get(client, session, "/backoffice/emissions")).text)
    assert set(before) == set(resources.STATUSES), before
    admin.execute("INSERT INTO insurance.emission_count_deltas (status, provider, delta) VALUES "
                  "('SUCCESS', 'KEPT_COUNT_TEST', 1000), ('ABANDONED', 'KEPT_COUNT_TEST', 7)")
    try:
        after = shown((await get(client, session, "/backoffice/emissions")).text)
        assert after["SUCCESS"] - before["SUCCESS"] == 1000 and after["ABANDONED"] - before["ABANDONED"] == 7
    finally:
        admin.execute("INSERT INTO insurance.emission_count_deltas (status, provider, delta) VALUES "
                      "('SUCCESS', 'KEPT_COUNT_TEST', -1000), ('ABANDONED', 'KEPT_COUNT_TEST', -7)")


async def test_retry_every_row_that_matches_asks_first_and_is_audited_as_one_action(client, session, make_risk_item,
                                                                                    make_emission, admin):
    code = provider()
    item = make_risk_item()
    rows = [make_emission(item["id"], status=s, provider=code, event=f"E_{n}")
            for n, s in enumerate(["ABANDONED", "ABANDONED", "FAILED", "SUCCESS"])]
    listing = await get(client, session, "/backoffice/emissions", f"provider={code}")
    assert f'href="/backoffice/emissions/retry-all?provider={code}"' in listing.text

    confirm = await get(client, session, "/backoffice/emissions/retry-all", f"provider={code}")
    assert confirm.status_code == 200 and 'data-matched="3"' in confirm.text, "SUCCESS is never sent again"
    assert f'<input type="hidden" name="provider" value="{code}">' in confirm.text
    assert admin.execute("SELECT count(*) AS n FROM insurance.integration_emissions WHERE provider = %s AND "
                         "status = 'ABANDONED'", (code,)).fetchone()["n"] == 2, "asking changes nothing"

    forged = await client.simulate_post("/backoffice/emissions/retry-all", body=f"provider={code}&csrf=forged",
                                        headers={**session["headers"], **FORM})
    assert forged.status_code == 403
    done = await post(client, session, "/backoffice/emissions/retry-all", f"provider={code}")
    assert done.status_code == 303, done.text
    assert done.headers["location"] == f"/backoffice/emissions?provider={code}&notice=emissions-retried&done=3&of=3"
    states = admin.execute("SELECT status, attempts FROM insurance.integration_emissions WHERE provider = %s ORDER BY id",
                           (code,)).fetchall()
    assert [s["status"] for s in states] == ["FAILED", "FAILED", "FAILED", "SUCCESS"]
    audit = admin.execute("SELECT * FROM insurance.audit_log WHERE action = 'emissions.retry_all' "
                          "AND details -> 'filters' ->> 'provider' = %s", (code,)).fetchall()
    assert len(audit) == 1, "one action, one audit row"
    assert sorted(audit[0]["targets"]) == sorted(r["id"] for r in rows[:3])
    assert audit[0]["actor"] == f"dashboard:{session['email']}" and audit[0]["via"] == "backoffice"
    assert audit[0]["details"]["queued"] == 3 and audit[0]["details"]["max"] == resources.RETRY_ALL_MAX


async def test_retry_every_row_that_matches_stops_at_its_cap(client, session, make_risk_item, make_emission, admin,
                                                             monkeypatch):
    monkeypatch.setattr(resources, "RETRY_ALL_MAX", 2)
    code = provider()
    item = make_risk_item()
    rows = [make_emission(item["id"], status="ABANDONED", provider=code, event=f"E_{n}") for n in range(3)]
    confirm = await get(client, session, "/backoffice/emissions/retry-all", f"provider={code}&status=ABANDONED")
    assert "More than 2 failed or abandoned emissions match: the newest 2" in confirm.text
    done = await post(client, session, "/backoffice/emissions/retry-all", f"provider={code}&status=ABANDONED")
    assert "done=2&of=2" in done.headers["location"]
    restarted = admin.execute("SELECT id FROM insurance.integration_emissions WHERE provider = %s AND status = 'FAILED'",
                              (code,)).fetchall()
    assert {r["id"] for r in restarted} == {rows[1]["id"], rows[2]["id"]}, "the newest first"


async def test_a_stale_last_error_on_a_success_row_is_shown_as_resolved(client, session, make_risk_item, make_emission):
    item = make_risk_item()
    em = make_emission(item["id"], status="SUCCESS", errors=[
        {"at": "2026-11-22T10:00:00Z", "attempt": 1, "code": "PROVIDER_REJECTED", "message": "400", "httpStatus": 400}])
    for path in (f"/backoffice/risk-items/{item['id']}", f"/backoffice/emissions?provider={em['provider']}"):
        html = (await get(client, session, path)).text
        row = re.search(rf'<td><a href="/backoffice/emissions/{em["id"]}">.*?</tr>', html, re.DOTALL).group()
        assert "<del><code>PROVIDER_REJECTED</code></del> <span class=\"resolved\">resolved</span>" in row, path
    detail = (await get(client, session, f"/backoffice/emissions/{em['id']}")).text
    assert "Resolved: the insurer took it after 1 failed attempt." in detail


@pytest.mark.parametrize("query", ["status=LOST", "status=pending", "since=yesterday", "provider=no%20spaces"])
async def test_a_bad_retry_all_filter_is_a_400_that_changes_nothing(client, session, query):
    assert (await get(client, session, "/backoffice/emissions/retry-all", query)).status_code == 400
    assert (await post(client, session, "/backoffice/emissions/retry-all", query)).status_code == 400


def test_the_cap_is_documented():
    text = (resources.HERE.parents[2] / "docs" / "operations.md").read_text()
    assert f"at most {resources.RETRY_ALL_MAX}" in text and "retry every row that matches" in text.lower()


