"""The back-office in a real browser (Debian's chromium, driven by Playwright), against the
real processes: an operator logs in with the keyboard, filters ABANDONED, opens the emission,
retries it once the sandbox is healed, sees SUCCESS and the audit row. Screenshots go to a
temporary folder (its path is printed; pytest keeps the last runs' folders)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from app.sandbox.credentials import PROVIDER_A_API_KEY
from tests.fixtures.pipeline import final, start_stack

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
pytestmark = pytest.mark.needs_chromium

# WCAG 2 contrast of an element's text against the first opaque background up its ancestors.
CONTRAST = """el => {
  const rgb = s => s.match(/[\\d.]+/g).map(Number);
  const lum = ([r, g, b]) => { const f = c => (c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
                               return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  let bg = null, node = el;
  while (node && node.nodeType === 1) { const c = rgb(getComputedStyle(node).backgroundColor);
    if (c.length < 4 || c[3] > 0) { bg = c; break; } node = node.parentElement; }
  bg = bg || [255, 255, 255];
  const a = lum(rgb(getComputedStyle(el).color)), b = lum(bg);
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}"""


@pytest.fixture(scope="module")
def stack():
    with start_stack(INTEGRATION_MAX_ATTEMPTS="3", INTEGRATION_RETRY_BASE_SECONDS="1",
                     INTEGRATION_RETRY_CAP_SECONDS="2") as started:
        yield started


@pytest.fixture
def browser_page(tmp_path_factory):
    from playwright.sync_api import sync_playwright
    shots = tmp_path_factory.mktemp("backoffice-screenshots")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"),
                                    args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(15000)
        page.shots = shots
        try:
            yield page
        finally:
            print(f"\nback-office screenshots: {shots}")
            browser.close()


def shot(page, name: str) -> None:
    page.screenshot(path=str(page.shots / f"{name}.png"), full_page=True)


def test_an_operator_retries_an_abandoned_emission_in_the_browser(stack, browser_page, admin, insert_items,
                                                                   make_user):
    page = browser_page
    user = make_user()
    with stack.worker():
        stack.fault(provider="PROVIDER_A", count=1, status=400)
        [item] = insert_items()
        emission = final(admin, item["id"])
        assert emission["status"] == "ABANDONED"

        # 1. Log in, with the keyboard only: the cursor starts in the e-mail field.
        page.goto(f"{stack.api}/backoffice/emissions")
        assert page.url.startswith(f"{stack.api}/backoffice/login")
        assert page.evaluate("document.activeElement.id") == "email"
        page.keyboard.type(user["email"])
        page.keyboard.press("Tab")
        page.keyboard.type(user["password"])
        shot(page, "1-login")
        page.keyboard.press("Enter")
        page.wait_for_url(f"{stack.api}/backoffice/emissions")
        page.keyboard.press("Tab")  # the first stop of every page skips the navigation
        assert page.evaluate("document.activeElement.textContent") == "Skip to content"

        # 2. Filter ABANDONED.
        page.select_option("#f-status", "ABANDONED")
        page.fill("#f-provider", "PROVIDER_A")
        page.keyboard.press("Enter")
        page.wait_for_url("**/backoffice/emissions?*status=ABANDONED*")
        statuses = page.locator("tbody .badge").all_inner_texts()
        assert statuses and set(statuses) == {"ABANDONED"}
        shot(page, "2-abandoned")

        # 3. Open ours (reached with the keyboard: focus its link, press Enter).
        page.focus(f'a[href="/backoffice/emissions/{emission["id"]}"]')
        page.keyboard.press("Enter")
        page.wait_for_url(f"**/backoffice/emissions/{emission['id']}")
        assert page.locator("[data-status]").inner_text() == "ABANDONED"
        assert "PROVIDER_REJECTED" in page.content() or "HTTP 400" in page.content()
        page.get_by_text("Request payload (secrets masked)").click()  # what was sent, key masked
        payload = page.locator("details pre").first.inner_text()
        assert "policies" in payload and PROVIDER_A_API_KEY not in page.content()
        shot(page, "3-detail")

        # 4. Retry it, the sandbox healed (its one fault was used up; none is left).
        stack.clear_faults()
        page.get_by_role("button", name="Retry this emission").click()
        page.wait_for_url("**notice=*")
        assert "Retry queued for 1 of 1 emission" in page.locator("[role=status]").inner_text()

        # Issue 30: the badge says the retry is queued (it said FAILED, attempts 0: "failed again").
        assert page.locator("[data-status]").inner_text() in ("RETRY QUEUED", "IN PROGRESS", "SUCCESS")
        assert page.locator("h1 .badge").inner_text() != "FAILED"

        # 5. It reaches SUCCESS, and the page follows it there by itself (no reload by the operator).
        page.wait_for_selector('[data-follow][data-settled="true"]', timeout=30000)  # reloaded once it settled
        assert page.locator("[data-status]").inner_text() == "SUCCESS"
        assert page.get_by_role("button", name="Retry this emission").count() == 0
        shot(page, "4-success")

    # 6. The audit row.
    page.get_by_role("link", name="Audit").click()
    page.wait_for_url("**/backoffice/audit")
    mine = page.locator("tbody tr", has_text=f"dashboard:{user['email']}")
    row = mine.filter(has_text="emissions.retry").first  # beside the views of the pages it opened (issue 39)
    assert str(emission["id"]) in row.inner_text() and "backoffice" in row.inner_text()
    assert mine.filter(has_text="people.viewEmission").count() >= 1
    shot(page, "5-audit")

    # Readable: body text, links, badges, buttons and headings meet WCAG AA (4.5:1).
    page.goto(f"{stack.api}/backoffice/emissions")
    for selector in ("body", "a", ".badge", "button", "h1", "th", "td", "caption", ".top nav a"):
        for element in page.locator(selector).all()[:20]:
            ratio = element.evaluate(CONTRAST)
            assert ratio >= 4.5, f"{selector} {element.inner_text()[:30]!r}: contrast {ratio:.2f}"
    # A visible focus ring on every control reached by Tab.
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("none", ""), "focused controls show an outline"


def log_in(page, api: str, user: dict, start: str = "/backoffice/emissions") -> None:
    page.goto(f"{api}{start}")
    page.fill("#email", user["email"])
    page.fill("#password", user["password"])
    page.keyboard.press("Enter")
    page.wait_for_url(f"{api}{start}")


def test_an_operator_finds_a_policy_then_stops_a_colleague_whose_cookie_is_refused(
        stack, browser_page, admin, make_user, make_risk_item, make_package):
    """Issue 21: a policy number quoted on the phone opens its page from the search box of any
    page; `users disable` stops another operator's open session at its next request."""
    import subprocess
    import sys

    import httpx

    from tests.conftest import ROOT, unique

    page = browser_page
    operator, colleague = make_user(), make_user()
    package = make_package(name="Travel gold")
    policy = unique("DEMO").upper()
    item = make_risk_item(package=package, policy_uid=policy, holder_email=f"{unique('ada')}@example.com")

    # 1. The search box is on every page; a policy number opens its risk item.
    log_in(page, stack.api, operator, "/backoffice/audit")
    page.fill("#q", policy)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{stack.api}/backoffice/risk-items/{item['id']}")
    assert page.locator("[data-policy]").inner_text() == policy
    assert "Travel gold" in page.content() and package["uid"] in page.content()
    shot(page, "6-search-to-policy")

    # 2. A colleague is logged in in another browser session.
    other = page.context.browser.new_context().new_page()
    other.shots = page.shots
    log_in(other, stack.api, colleague)
    cookie = {c["name"]: c["value"] for c in other.context.cookies()}["dashboard_session"]
    trpc = f"{stack.api}/api/trpc/integrationEmissions.list"
    assert httpx.get(trpc, cookies={"dashboard_session": cookie}).status_code == 200

    # 3. They are disabled from the command line: the next request of that session is refused.
    done = subprocess.run([sys.executable, "-m", "app", "users", "disable", "--email", colleague["email"]],
                          cwd=ROOT, env=stack.env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    other.reload()
    assert other.url.startswith(f"{stack.api}/backoffice/login"), "the back-office sends them to the login"
    assert httpx.get(trpc, cookies={"dashboard_session": cookie}).status_code == 401, "tRPC refuses the cookie"
    other.fill("#email", colleague["email"])
    other.fill("#password", colleague["password"])
    other.keyboard.press("Enter")
    other.wait_for_selector("[role=alert]")
    assert other.url.startswith(f"{stack.api}/backoffice/login"), "and they cannot log in again"
    shot(other, "7-disabled-login")
    other.context.close()

    # 4. The operator's own session goes on; the audit says who disabled whom, from where.
    page.goto(f"{stack.api}/backoffice/audit")
    row = page.locator("tbody tr", has_text="users.disable").first
    assert colleague["email"] in row.inner_text() and "cli" in row.inner_text()
