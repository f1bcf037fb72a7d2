"""Issue 42, item 6: what an operator needs is on screen, at 1,280 and 900 px, in a real browser
(Debian's chromium, driven by Playwright). tests/dashboard/backoffice/test_layout.py checks that
nothing sticks out of the page; a wide table may scroll inside its own box. Here, what the
operator came for must be seen without scrolling that box: the emissions' last error, each
search result's policy number (on one line) and state, a partner's whole webhook URL, the audit
page's channels by name and its numbers saying what they are, and a header on one row.

The data is made to be wide: a long policy number, a long error code and message, a long
webhook URL, many channels."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import httpx
import orjson
import pytest

from tests.conftest import unique
from tests.dashboard.backoffice.test_layout import CHROMIUM, api  # noqa: F401 (a fixture)

pytestmark = pytest.mark.needs_chromium
WIDTHS = (1280, 900)
HOOK = ("https://hooks.a-partner-with-a-rather-long-name.example.com/insurance/v2/events/"
        + "whole-path-the-operator-must-read-" * 3 + "end")
ERROR_CODE = "PROVIDER_REJECTED_THE_POLICY_PAYLOAD"
CHANNELS = 12

# The elements an operator needs, as the page shows them: [{what, text, problems[]}]. `needs` is
# a list of [description, CSS selector of the table, header text of the column, one line?].
SEEN = """([needs]) => {
  const width = document.documentElement.clientWidth;
  const out = [];
  // Fully inside the window and inside every box that clips or scrolls it, unscrolled.
  const hidden = el => {
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) return 'not shown';
    if (box.left < -1 || box.right > width + 1) return `outside the window (${Math.round(box.left)}..${Math.round(box.right)} of ${width})`;
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      const style = getComputedStyle(a);
      if (!['auto', 'scroll', 'hidden', 'clip'].includes(style.overflowX)) continue;
      const clip = a.getBoundingClientRect();
      if (box.left < clip.left - 1 || box.right > clip.right + 1)
        return `cut by its scrolling box (${Math.round(box.right)} px beyond ${Math.round(clip.right)})`;
    }
    if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible') return 'cut inside itself';
    return null;
  };
  for (const [what, tableSelector, header, oneLine] of needs) {
    for (const table of document.querySelectorAll(tableSelector)) {
      const heads = [...table.querySelectorAll('thead th')].map(th => th.textContent.trim());
      const column = heads.indexOf(header);
      if (column < 0) { out.push({what, text: '', problems: [`no "${header}" column (${heads.join(', ')})`]}); continue; }
      for (const row of table.querySelectorAll('tbody tr')) {
        const cell = row.children[column];
        if (!cell || row.children.length !== heads.length) continue;
        const problems = [];
        const why = hidden(cell);
        if (why) problems.push(why);
        if (oneLine) for (const part of cell.querySelectorAll('a, code, span'))
          if (part.getClientRects().length > 1) problems.push(`"${part.textContent.trim()}" wraps`);
        out.push({what, text: cell.innerText.trim(), problems});
      }
    }
  }
  const parts = [...document.querySelectorAll('header.top > *')].filter(el => el.getBoundingClientRect().width > 0)
                  .map(el => el.getBoundingClientRect());
  out.push({what: 'header', text: '', problems: parts.length && Math.max(...parts.map(b => b.top)) >= Math.min(...parts.map(b => b.bottom))
                                         ? ['the header wraps onto a second row'] : []});
  return out;
}"""


@pytest.fixture
def on_call(admin, make_package, make_risk_item, make_channel, make_emission):
    """What an operator on call meets: two long policy numbers sharing a beginning (one in
    trouble), a long error, a partner with a long webhook URL, many channels in the audit log."""
    hooked = make_channel(integration_payload={"webhooks": [HOOK]})
    admin.execute("INSERT INTO webhooks.secrets (channel_id, salt) VALUES (%s, %s)", (hooked["id"], os.urandom(32)))
    package = make_package(name="Travel gold with winter sports and cancellation cover", sales="PROVIDER_A")
    prefix = f"POL-{unique('2026-11-LONG-POLICY-NUMBER').upper()}"
    items = [make_risk_item(package=package, channel_id=hooked["id"], policy_uid=f"{prefix}-{n}",
                            holder_email=f"{unique('holder')}@an-insurance-partner.example.com") for n in (1, 2)]
    history = [{"at": "2026-11-22T10:00:00Z", "attempt": 1, "code": ERROR_CODE, "httpStatus": 422,
                "message": "the insurer refused the payload: " + "the field policyholder.address is too long " * 8}]
    failed = make_emission(items[0]["id"], provider="PROVIDER_WITH_A_LONG_CODE", event="SALES_DISPATCH",
                           status="FAILED", attempts=3, errors=history)
    # The partner heard of it: the webhooks trigger queues an event to the long URL.
    admin.execute("UPDATE insurance.integration_emissions SET status = 'ABANDONED', next_retry_at = NULL WHERE id = %s",
                  (failed["id"],))
    make_emission(items[1]["id"], provider="PROVIDER_A", event="SALES_DISPATCH", status="SUCCESS",
                  external_id=f"EXTERNAL-{unique('ID-FROM-THE-INSURER')}")
    channels = [make_channel() for _ in range(CHANNELS)]
    for channel in channels:
        admin.execute("SELECT insurance.record_audit('cli:on-call', 'channels.revoke', jsonb_build_array(%s::text))",
                      (channel["id"],))
    admin.execute("SELECT insurance.record_audit('cli:on-call', 'emissions.retry', %s::jsonb)",
                  (orjson.dumps([failed["id"]]).decode(),))
    yield {"prefix": prefix, "failed": failed, "items": items, "channels": channels, "hooked": hooked}
    admin.execute("UPDATE outbox.http_requests SET delivered_at = coalesce(delivered_at, now()) WHERE channel_id = %s",
                  (hooked["id"],))


def test_what_the_operator_needs_is_on_screen_at_1280_and_900_px(api, on_call, make_user, tmp_path):  # noqa: F811
    from playwright.sync_api import sync_playwright
    user = make_user()
    login = httpx.post(f"{api}/api/auth/login", json={"email": user["email"], "password": user["password"]})
    assert login.status_code == 200, login.text
    cookie = {"name": "dashboard_session", "value": login.cookies["dashboard_session"], "url": api}
    failed = on_call["failed"]["id"]
    pages = {
        "/backoffice/audit": [["audit targets", "table", "Targets", False]],
        "/backoffice/emissions": [["policy", "table", "Policy", True]],
        f"/backoffice/search?q={on_call['prefix']}": [["policy", "table", "Policy", True],
                                                       ["state", "table", "State", False]],
        f"/backoffice/emissions/{failed}": [["webhook URL", "table[data-webhooks]", "To", False]],
        f"/backoffice/risk-items/{on_call['items'][0]['id']}": [["webhook URL", "table[data-webhooks]", "To", False]],
        "/backoffice/outbox": [["webhook URL", "table", "To", False]],
        "/backoffice/users": [],
    }
    problems: list[str] = []
    seen: dict[str, list[dict]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"),
                                    args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            for width in WIDTHS:
                context = browser.new_context(viewport={"width": width, "height": 900})
                context.add_cookies([cookie])
                page = context.new_page()
                page.set_default_timeout(15000)
                for path, needs in pages.items():
                    answer = page.goto(f"{api}{path}")
                    assert answer.status == 200 and "/login" not in page.url, f"{path}: HTTP {answer.status}"
                    page.screenshot(path=str(tmp_path / f"{width}{path.replace('/', '_')[:80]}.png"), full_page=True)
                    if path == "/backoffice/emissions" and width >= 1280:  # beside the policy at 900: scrolled to
                        needs = [*needs, ["last error", "table", "Last error", False]]
                    found = page.evaluate(SEEN, [needs])
                    seen[f"{width} {path}"] = found
                    for what in dict.fromkeys(f["what"] for f in found):  # three examples of each
                        bad = [f for f in found if f["what"] == what and f["problems"]]
                        problems += [f"{width} px {path}: {what} {f['text'][:60]!r}: {'; '.join(f['problems'])}"
                                     for f in bad[:3]] + ([f"  ... and {len(bad) - 3} more"] if len(bad) > 3 else [])
                context.close()
        finally:
            browser.close()
            print(f"\non-screen screenshots: {tmp_path}")

    def texts(width: int, path: str, what: str) -> list[str]:
        return [f["text"] for f in seen[f"{width} {path}"] if f["what"] == what]

    if not any(ERROR_CODE in t for t in texts(1280, "/backoffice/emissions", "last error")):
        problems.append("1280 px: the emissions page does not show the last error")
    for width in WIDTHS:
        states = texts(width, f"/backoffice/search?q={on_call['prefix']}", "state")
        if not (len(states) == 2 and any("ABANDONED" in s for s in states) and any("SUCCESS" in s for s in states)):
            problems.append(f"{width} px: the search results do not each say their state: {states}")
        for path in (f"/backoffice/emissions/{failed}", "/backoffice/outbox"):
            if HOOK not in texts(width, path, "webhook URL"):
                problems.append(f"{width} px {path}: the webhook URL is not shown whole")
        audit = " ".join(texts(width, "/backoffice/audit", "audit targets"))
        unnamed = [c["name"] for c in on_call["channels"] if f"channel {c['name']}" not in audit or c["id"] in audit]
        if unnamed:
            problems.append(f"{width} px: the audit page shows {len(unnamed)} channels by raw id, not as 'channel NAME'")
        if f"emission {failed}" not in audit:
            problems.append(f"{width} px: the audit page's emission number does not say what it is")
    assert not problems, "\n".join(problems)
