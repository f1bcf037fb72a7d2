"""Issue 30, item 5: every back-office page holds at 1,280 and 900 px in a real browser (Debian's
chromium, driven by Playwright). Nothing sticks out of the window or of its card (a wide table
scrolls inside its own container), the header stays on one row at 1,280 px, and timestamps,
ids and policy numbers never wrap.

The data is made to be wide: a long policy number, beneficiaries with long names and e-mails,
an outbox row with a long URL, a provider's long error text."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import httpx
import orjson
import pytest

from tests.conftest import child_environ, free_port, running, unique

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
pytestmark = pytest.mark.needs_chromium
WIDTHS = (1280, 900)

# What the page shows that it should not: a list of sentences (empty when the layout holds).
LAYOUT_PROBLEMS = """([oneRowHeader]) => {
  const problems = [];
  const root = document.documentElement, width = root.clientWidth;
  const name = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
                     (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\\s+/).join('.') : '');
  if (root.scrollWidth > width + 1) problems.push(`the page scrolls sideways: ${root.scrollWidth} px in ${width}`);
  const clipped = el => { for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(a).overflowX)) return true; } return false; };
  for (const el of document.querySelectorAll('body *')) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 || clipped(el)) continue;
    if (box.right > width + 1) problems.push(`${name(el)} ends at ${Math.round(box.right)} px in ${width}`);
  }
  for (const el of document.querySelectorAll('.card, main, section')) {
    if (el.scrollWidth > el.clientWidth + 1)
      problems.push(`${name(el)} holds ${el.scrollWidth} px in ${el.clientWidth}`);
  }
  if (oneRowHeader) {
    const parts = [...document.querySelectorAll('header.top > *')].filter(el => el.getBoundingClientRect().width > 0)
                    .map(el => el.getBoundingClientRect());
    if (parts.length && Math.max(...parts.map(b => b.top)) >= Math.min(...parts.map(b => b.bottom)))
      problems.push('the header wraps onto a second row');
  }
  for (const el of document.querySelectorAll('time, td code:not(.url), .id')) {
    if (el.getClientRects().length > 1) problems.push(`${name(el)} "${el.textContent.trim()}" wraps`);
  }
  return problems;
}"""


@pytest.fixture(scope="module")
def api():
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with running(["serve", "--port", str(port)], child_environ(PORT=str(port), PUBLIC_BASE_URL=base),
                 f"{base}/healthz"):
        yield base


@pytest.fixture
def wide_data(admin, make_package, make_risk_item, make_channel):
    """Rows as wide as an operator meets them."""
    channel = make_channel()
    package = make_package(name="Travel gold with winter sports and cancellation cover")
    policy = f"POL-{unique('2026-11-LONG-POLICY-NUMBER').upper()}"
    beneficiaries = [{"name": f"Maria de los Ángeles Fernández-Villaverde y Castellanos {n}",
                      "email": f"maria.de.los.angeles.fernandez.villaverde.{n}.{unique('b')}@an-insurance-partner.example.com",
                      "share": 20} for n in range(3)]
    item = make_risk_item(package=package, channel_id=channel["id"], policy_uid=policy,
                          holder_email=f"{unique('a-very-long-holder-address')}@an-insurance-partner.example.com",
                          beneficiaries=beneficiaries)
    history = [{"at": "2026-11-22T10:00:00Z", "attempt": 1, "code": "PROVIDER_REJECTED_THE_POLICY_PAYLOAD",
                "message": "x" * 400, "httpStatus": 422,
                "requestPayload": {"body": {"policy": policy, "note": "y" * 300}}}]
    emissions = [admin.execute(
        """INSERT INTO insurance.integration_emissions (risk_item_id, provider, event, status, attempts,
                                                         error_history, next_retry_at, external_id)
           VALUES (%s, %s, %s, %s, 3, %s, CASE WHEN %s = 'FAILED' THEN now() + interval '1 hour' END, %s)
           RETURNING id""",
        (item["id"], "PROVIDER_WITH_A_LONG_CODE", event, status, orjson.dumps(history).decode(), status,
         f"EXTERNAL-{unique('ID-FROM-THE-INSURER')}" if status == "SUCCESS" else None)).fetchone()["id"]
        for event, status in (("SALES_DISPATCH", "ABANDONED"), ("POLICY_CREATED", "FAILED"),
                              ("BENEFICIARIES_SYNC", "SUCCESS"))]
    outbox = admin.execute(
        "SELECT outbox.http_post(%s, '{}', '{}', now() + interval '1 day') AS id",
        (f"https://hooks.partner-with-a-long-name.example.com/webhooks/insurance/{'z' * 120}",)).fetchone()["id"]
    dead = admin.execute("SELECT outbox.http_post('/api/integrations/retry', %s, '{}', now()) AS id",
                         (orjson.dumps({"emissionId": emissions[0]}).decode(),)).fetchone()["id"]
    admin.execute("UPDATE outbox.http_requests SET dead_at = now(), attempts = 20, last_status = 503, "
                  "last_error = %s WHERE id = %s", ("z" * 300, dead))
    yield {"item": item, "policy": policy, "emissions": emissions}
    admin.execute("UPDATE outbox.http_requests SET delivered_at = now() WHERE id = ANY(%s)", ([outbox, dead],))


def pages(data: dict) -> list[str]:
    return ["/backoffice/emissions", "/backoffice/emissions?status=ABANDONED",
            f"/backoffice/emissions/{data['emissions'][0]}", f"/backoffice/emissions/{data['emissions'][2]}",
            f"/backoffice/risk-items/{data['item']['id']}", "/backoffice/outbox", "/backoffice/outbox?state=dead",
            "/backoffice/audit", "/backoffice/search", f"/backoffice/search?q={data['policy'][:12]}",
            "/backoffice/packages", "/backoffice/users", "/backoffice/no-such-page"]


def test_every_back_office_page_holds_at_1280_and_900_px(api, wide_data, make_user, tmp_path):
    from playwright.sync_api import sync_playwright
    user = make_user()
    login = httpx.post(f"{api}/api/auth/login", json={"email": user["email"], "password": user["password"]})
    assert login.status_code == 200, login.text
    cookie = {"name": "dashboard_session", "value": login.cookies["dashboard_session"], "url": api}
    found: dict[str, list[str]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"),
                                    args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            for width in WIDTHS:
                context = browser.new_context(viewport={"width": width, "height": 900})
                page = context.new_page()
                page.set_default_timeout(15000)
                page.goto(f"{api}/backoffice/login")  # no session yet
                found[f"{width} /backoffice/login"] = page.evaluate(LAYOUT_PROBLEMS, [width >= 1280])
                context.add_cookies([cookie])
                for path in pages(wide_data):
                    answer = page.goto(f"{api}{path}")
                    assert answer.status == (404 if "no-such" in path else 200), f"{path}: HTTP {answer.status}"
                    assert "/login" not in page.url, path
                    page.screenshot(path=str(tmp_path / f"{width}{path.replace('/', '_')}.png"), full_page=True)
                    found[f"{width} {path}"] = page.evaluate(LAYOUT_PROBLEMS, [width >= 1280])
                context.close()
        finally:
            browser.close()
            print(f"\nlayout screenshots: {tmp_path}")
    problems = {where: what[:5] for where, what in found.items() if what}
    assert not problems, "\n".join(f"{where}: {'; '.join(what)}" for where, what in problems.items())
