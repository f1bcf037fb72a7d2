"""The API reference a person reads (issue 29): /docs, Swagger UI served by the app itself,
rendered by Debian's chromium (Playwright) from a live `serve`, with every request the page
makes recorded: none leaves the machine, and the partner and holder documents are listed; the
internal one only where the internal documents are served (development, or METRICS_ALLOWED_IPS)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import orjson
import pytest

from app.apidocs import installed
from tests.conftest import child_environ, free_port, running

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def documents_of(page_html: str) -> list[str]:
    import html
    import re
    found = re.search(r'data-documents="([^"]*)"', page_html)
    assert found, page_html[:500]
    return [d["name"] for d in orjson.loads(html.unescape(found.group(1)))]


async def test_docs_lists_the_partner_and_holder_documents_and_internal_only_where_allowed(client):
    assert installed(), "the viewer is missing: run scripts/api-viewer.sh (make setup does)"
    resp = await client.simulate_get("/docs", remote_addr="127.0.0.1")  # METRICS_ALLOWED_IPS' default
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/html")
    assert documents_of(resp.text) == ["partner", "holder", "internal"]
    outsider = await client.simulate_get("/docs", remote_addr="203.0.113.9")
    assert documents_of(outsider.text) == ["partner", "holder"], "APP_ENV=test is not development"
    policy = resp.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "connect-src 'self'" in policy and "http" not in policy
    for asset in ("swagger-ui.css", "swagger-ui-bundle.js", "swagger-ui-standalone-preset.js", "viewer.js"):
        got = await client.simulate_get(f"/docs/assets/{asset}")
        assert got.status_code == 200 and len(got.content) > 100, asset
    for name in ("package.json", "..%2F__init__.py", "swagger-ui.js.map", "index.html"):
        assert (await client.simulate_get(f"/docs/assets/{name}")).status_code == 404, name


@pytest.mark.needs_chromium
def test_the_reference_renders_in_chromium_with_no_request_leaving_the_machine(tmp_path):
    from playwright.sync_api import sync_playwright
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    requests: list[str] = []
    with running(["serve", "--port", str(port)], child_environ(PORT=str(port)), f"{base}/healthz"), \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"),
                                    args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(30000)
            page.on("request", lambda r: requests.append(r.url))
            failed: list[str] = []
            page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(f"{base}/")
            page.click("a[href='/docs']")
            page.wait_for_selector("text=authorizeV2", state="attached")  # the partner document's operations
            page.wait_for_selector(".opblock-tag-section")
            partner_title = page.text_content(".info .title")
            assert "partner" in partner_title, partner_title
            assert page.locator(".opblock").count() > 10
            # The holder document, chosen in the viewer's own list.
            page.select_option("#select", label="holder")
            page.wait_for_selector("text=requestOtp", state="attached")
            assert "holder" in page.text_content(".info .title")
            page.screenshot(path=str(tmp_path / "docs.png"), full_page=False)
        finally:
            browser.close()
    foreign = [u for u in requests if urlsplit(u).scheme not in ("data", "blob") and urlsplit(u).netloc != f"127.0.0.1:{port}"]
    assert foreign == [], "the reference asked another host"
    assert any(u.endswith("/openapi/partner.json") for u in requests)
    assert any(u.endswith("/openapi/holder.json") for u in requests)
    assert errors == [] and failed == [], (errors, failed)
    print(f"\nAPI reference screenshot: {tmp_path / 'docs.png'}")
