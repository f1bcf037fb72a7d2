"""The operator's console through the real pipeline (the sandbox, the API and the worker as
processes): each emission is in exactly one state while a retry batch runs, the counts add up
and equal what each filter lists; a paused insurer spends no attempt and every emission made
during its pause is sent once after the resume; the providers page draws its health."""
from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import orjson
import psycopg
import pytest

from tests.conftest import ROOT, unique, wait_for
from tests.dashboard.conftest import PASSWORD
from tests.fixtures.pipeline import Stack, start_stack

STATES = ("SUCCESS", "IN_PROGRESS", "ABANDONED", "PAUSED", "RETRY_QUEUED", "FAILED")


@pytest.fixture(scope="module")
def stack(admin) -> Iterator[Stack]:
    with start_stack(INTEGRATION_MAX_ATTEMPTS="3", INTEGRATION_RETRY_BASE_SECONDS="1",
                     INTEGRATION_RETRY_CAP_SECONDS="1", WORKER_LEASE_SECONDS="5") as started:
        yield started


def insert_items(admin, package: dict, count: int) -> list[dict]:
    with admin.transaction():
        return admin.execute(
            """INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject)
               SELECT %s, %s || '-' || n, 'travel', %s FROM generate_series(1, %s) n RETURNING *""",
            (package["id"], unique("cs"), orjson.dumps({"name": "Ada Lovelace", "email": "ada@example.com"}).decode(),
             count)).fetchall()


def emissions_of(admin, items: list[dict]) -> list[dict]:
    return admin.execute("SELECT * FROM insurance.integration_emissions WHERE risk_item_id = ANY(%s) ORDER BY id",
                         ([i["id"] for i in items],)).fetchall()


def dashboard_claims(email: str = "console@insurance.invalid") -> str:
    return orjson.dumps({"sub": "1", "role": "dashboard", "email": email}).decode()


def snapshot(url: str, success: bool = True) -> dict:
    """In one snapshot (REPEATABLE READ), as the page's dashboard role reads them: the counts per
    state, and how many rows each state's filter lists (every page of it). The SUCCESS filter
    (final, and most of the rows of a test database that earlier tests filled) is paged only
    when `success`: the moments in the middle of a batch read the states that move."""
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        conn.execute("SELECT set_config('role', 'insurance_dashboard', true), "
                     "set_config('request.jwt.claims', %s, true)", (dashboard_claims(),))
        counts = orjson.loads(conn.execute("SELECT dashboard.emission_counts()::text").fetchone()[0])
        listed: dict[str, int] = {}
        for state in STATES if success else [s for s in STATES if s != "SUCCESS"]:
            cursor, n = None, 0
            while True:
                page = orjson.loads(conn.execute(
                    "SELECT dashboard.list_emissions(%s, NULL, NULL, NULL, NULL, %s, 100)::text",
                    ([state], cursor)).fetchone()[0])
                n += len(page["items"])
                assert all(i["state"] == state for i in page["items"]), (state, page["items"][:3])
                cursor = page["nextCursor"] and int(page["nextCursor"])
                if not cursor:
                    break
            listed[state] = n
    return {"counts": counts, "listed": listed}


def check(shot: dict) -> None:
    counts, listed = shot["counts"], shot["listed"]
    assert sum(counts[s] for s in STATES) == counts["total"], shot
    assert {s: counts[s] for s in listed} == listed, shot


def test_the_counts_add_up_while_a_retry_batch_runs(stack, admin, make_package):
    url = stack.env["DATABASE_URL"]
    package = make_package(variants=("travel",), sales="PROVIDER_A")
    # Eight emissions abandoned by the insurer (a 400 is not retried).
    stack.fault(provider="PROVIDER_A", count=8, status=400)
    items = insert_items(admin, package, 8)
    with stack.worker():
        wait_for(lambda: len([e for e in emissions_of(admin, items) if e["status"] == "ABANDONED"]) == 8, 30,
                 "eight ABANDONED emissions")
    check(snapshot(url))
    # The retry batch: three fail once more (retried by the backoff), every call takes 0.8 s.
    stack.fault(provider="PROVIDER_A", count=3, status=503)
    stack.fault(provider="PROVIDER_A", count=8, delay=0.8)
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute("SELECT set_config('role', 'insurance_dashboard', true), set_config('request.jwt.claims', %s, true)",
                     (dashboard_claims(),))
        done = orjson.loads(conn.execute(
            "SELECT dashboard.retry_matching(ARRAY['ABANDONED'], 'PROVIDER_A', NULL, NULL, NULL, 500, false, 'backoffice')::text"
        ).fetchone()[0])
    assert done["queued"] >= 8
    first = snapshot(url)
    check(first)
    assert first["counts"]["RETRY_QUEUED"] >= 8, "retried and not yet claimed: RETRY QUEUED, not FAILED"
    seen = {s for s in STATES if first["counts"][s]}
    shots = 1
    with stack.worker():
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            shot = snapshot(url, success=False)
            check(shot)
            shots += 1
            seen |= {s for s in STATES if shot["counts"][s]}
            if all(e["status"] == "SUCCESS" for e in emissions_of(admin, items)):
                break
            time.sleep(0.1)
    assert all(e["status"] == "SUCCESS" for e in emissions_of(admin, items))
    check(snapshot(url))
    assert {"RETRY_QUEUED", "IN_PROGRESS", "FAILED", "SUCCESS"} <= seen, (seen, shots)


def app_command(stack: Stack, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "app", *args], env=stack.env, cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return orjson.loads(out)


def test_a_paused_provider_spends_no_attempt_and_sends_everything_once_after_the_resume(stack, admin, make_package):
    package = make_package(variants=("travel",), sales="PROVIDER_B")
    stack.clear_faults()
    assert app_command(stack, "providers", "pause", "PROVIDER_B")["paused"] is True
    try:
        before = {r["idempotencyKey"] for r in stack.requests("PROVIDER_B") if r.get("idempotencyKey")}
        with stack.worker():
            items = insert_items(admin, package, 5)
            waiting = wait_for(lambda: (e := emissions_of(admin, items)) and len(e) == 5 and e, 30,
                               "five emissions waiting")
            time.sleep(1.5)  # the worker has had time to call, were it allowed to
            waiting = emissions_of(admin, items)
            assert [(e["status"], e["attempts"]) for e in waiting] == [("FAILED", 0)] * 5, "no attempt spent"
            keys = {f"{i['uid']}:PROVIDER_B:SALES_DISPATCH" for i in items}
            assert not keys & {r["idempotencyKey"] for r in stack.requests("PROVIDER_B")}, "no call during the pause"
            with psycopg.connect(stack.env["DATABASE_URL"], autocommit=True) as conn, conn.transaction():
                conn.execute("SELECT set_config('role', 'insurance_dashboard', true), "
                             "set_config('request.jwt.claims', %s, true)", (dashboard_claims(),))
                states = [orjson.loads(conn.execute("SELECT dashboard.emission_state(%s)::text", (e["id"],)).fetchone()[0])
                          ["state"] for e in waiting]
            assert states == ["PAUSED"] * 5
            # The sweep (the minute job) queues nothing of a paused provider.
            admin.execute("SELECT integrations.run_sweep()")
            time.sleep(0.5)
            assert [e["attempts"] for e in emissions_of(admin, items)] == [0] * 5

            resumed = app_command(stack, "providers", "resume", "PROVIDER_B")
            assert resumed["retriesQueued"] == 5
            done = wait_for(lambda: (e := emissions_of(admin, items)) and all(x["status"] == "SUCCESS" for x in e) and e,
                            30, "every waiting emission sent")
        assert [e["attempts"] for e in done] == [1] * 5, "each sent once, at its first attempt"
        calls = [r["idempotencyKey"] for r in stack.requests("PROVIDER_B") if r.get("idempotencyKey") in keys]
        assert sorted(calls) == sorted(keys), "each issued once"
        assert not before & keys
        audit = admin.execute("SELECT action, via FROM insurance.audit_log WHERE action LIKE 'providers.%%' "
                              "ORDER BY id DESC LIMIT 2").fetchall()
        assert [(a["action"], a["via"]) for a in audit] == [("providers.resume", "cli"), ("providers.pause", "cli")]
    finally:
        admin.execute("DELETE FROM insurance.provider_pauses WHERE provider = 'PROVIDER_B'")


def test_a_pause_with_an_end_resumes_by_itself(stack, admin, make_package):
    package = make_package(variants=("travel",), sales="PROVIDER_B")
    stack.clear_faults()
    app_command(stack, "providers", "pause", "PROVIDER_B", "--until", "2m")
    try:
        with stack.worker():
            items = insert_items(admin, package, 2)
            wait_for(lambda: len(emissions_of(admin, items)) == 2, 30, "two emissions waiting")
            # Its time has come (moved, as the clock cannot be): the minute sweep ends it.
            admin.execute("UPDATE insurance.provider_pauses SET paused_at = now() - interval '3 minutes', "
                          "until = now() - interval '1 second' WHERE provider = 'PROVIDER_B'")
            result = admin.execute("SELECT integrations.run_sweep() AS r").fetchone()["r"]
            assert [p["provider"] for p in result["pausesEnded"]] == ["PROVIDER_B"]
            done = wait_for(lambda: (e := emissions_of(admin, items)) and all(x["status"] == "SUCCESS" for x in e) and e,
                            30, "the waiting emissions sent")
        assert [e["attempts"] for e in done] == [1, 1]
    finally:
        admin.execute("DELETE FROM insurance.provider_pauses WHERE provider = 'PROVIDER_B'")


def test_the_providers_page_draws_health_and_pauses(stack, admin, make_user):
    user = make_user()
    with httpx.Client(base_url=stack.api) as web:
        assert web.post("/api/auth/login", json={"email": user["email"], "password": PASSWORD}).status_code == 200
        page = web.get("/backoffice/providers?hours=1")
        assert page.status_code == 200
        assert "<svg" in page.text and "http://" not in page.text.split("<svg", 1)[1].split("</svg>", 1)[0].replace(
            'xmlns="http://www.w3.org/2000/svg"', "")
        assert re.search(r'data-provider="PROVIDER_A".*?<strong>\d+</strong> call', page.text, re.DOTALL), "PROVIDER_A's calls"
        assert 'data-provider="WEBHOOKS"' in page.text
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page.text).group(1)
        paused = web.post("/backoffice/providers/pause", data={"csrf": csrf, "provider": "PROVIDER_C", "until": ""},
                          headers={"Origin": stack.api})
        assert paused.status_code == 303, paused.text
        page = web.get("/backoffice/providers")
        assert re.search(r'data-provider="PROVIDER_C".*?data-paused', page.text, re.DOTALL)
        refused = web.post("/backoffice/providers/pause", data={"csrf": csrf, "provider": "PROVIDER_C",
                                                                 "until": "2001-01-01T00:00"}, headers={"Origin": stack.api})
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "VALIDATION_ERROR"
        assert web.post("/backoffice/providers/resume", data={"csrf": csrf, "provider": "PROVIDER_C"},
                        headers={"Origin": stack.api}).status_code == 303
        assert web.post("/backoffice/providers/resume", data={"csrf": "x", "provider": "PROVIDER_C"},
                        headers={"Origin": stack.api}).status_code == 403
        # The strip adds up on the page too, and says each count the filter lists.
        strip = web.get("/backoffice/emissions").text
        counts = {s: int(n) for s, n in re.findall(r'data-count="(\w+)">.*?<strong>(\d+)</strong>', strip, re.DOTALL)}
        assert set(counts) == set(STATES)
        total = int(re.search(r"data-total>(\d+) emissions", strip).group(1))
        assert sum(counts.values()) == total
    rows = admin.execute("SELECT action, via, targets FROM insurance.audit_log WHERE action LIKE 'providers.%%' "
                         "AND actor = %s ORDER BY id", (f"dashboard:{user['email']}",)).fetchall()
    assert [(r["action"], r["via"], r["targets"]) for r in rows] == [
        ("providers.pause", "backoffice", ["PROVIDER_C"]), ("providers.resume", "backoffice", ["PROVIDER_C"])]


CHROMIUM = "/usr/bin/chromium"


@pytest.mark.needs_chromium
def test_the_providers_page_in_the_browser_draws_on_the_server_and_pauses(stack, admin, make_user, make_package):
    """In chromium: the chart is there without a script or a request elsewhere, the page breaks no
    Content-Security-Policy rule, and an operator pauses and resumes an insurer with the form;
    the emissions page says it is paused."""
    from playwright.sync_api import sync_playwright
    package = make_package(variants=("travel",), sales="PROVIDER_A")
    stack.clear_faults()
    with stack.worker():
        items = insert_items(admin, package, 2)
        wait_for(lambda: all(e["status"] == "SUCCESS" for e in emissions_of(admin, items)) and len(emissions_of(admin, items)) == 2,
                 30, "two calls to PROVIDER_A")
    user = make_user()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(15000)
            problems: list[str] = []
            # A CSP violation is a console error ("Refused to ..."); a missing resource is an
            # answer >= 400 (the browser's own /favicon.ico aside).
            page.on("console", lambda m: problems.append(m.text)
                    if m.type == "error" and not m.text.startswith("Failed to load resource") else None)
            page.on("response", lambda r: problems.append(f"{r.status} {r.url}")
                    if r.status >= 400 and not r.url.endswith("/favicon.ico") else None)
            requested: list[str] = []
            page.on("request", lambda r: requested.append(r.url))
            page.goto(f"{stack.api}/backoffice/login?next=/backoffice/providers")
            page.fill("#email", user["email"])
            page.fill("#password", user["password"])
            page.keyboard.press("Enter")
            page.wait_for_url(f"{stack.api}/backoffice/providers")
            chart = page.locator('[data-provider="PROVIDER_A"] svg.chart')
            assert chart.locator("rect").count() > 1, "PROVIDER_A's calls drawn as bars"
            assert chart.bounding_box()["width"] > 200
            assert page.locator('[data-provider="WEBHOOKS"] svg.chart').count() == 1

            section = page.locator('[data-provider="PROVIDER_C"]')
            section.locator("button", has_text="Pause PROVIDER_C").click()
            page.wait_for_url(f"{stack.api}/backoffice/providers?*")
            assert "Provider paused" in page.locator(".notice").inner_text()
            assert section.locator("[data-paused]").inner_text() == "PAUSED"
            page.goto(f"{stack.api}/backoffice/emissions")
            assert "PROVIDER_C is paused" in page.locator('[data-paused="PROVIDER_C"]').inner_text()
            page.goto(f"{stack.api}/backoffice/providers")
            page.locator('[data-provider="PROVIDER_C"]').locator("button", has_text="Resume PROVIDER_C").click()
            page.wait_for_url(f"{stack.api}/backoffice/providers?*")
            assert page.locator('[data-provider="PROVIDER_C"] [data-paused]').count() == 0
            assert not problems, problems
            assert all(u.startswith(stack.api) for u in requested), [u for u in requested if not u.startswith(stack.api)]
        finally:
            browser.close()
            admin.execute("DELETE FROM insurance.provider_pauses WHERE provider = 'PROVIDER_C'")
