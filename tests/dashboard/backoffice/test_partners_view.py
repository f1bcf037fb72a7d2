"""Issue 30, item 3: what partners saw. The emission and risk-item pages name the channel and list
every webhook delivery of the emission with its state; the outbox page names the channel and
shows a partner's whole URL; audit targets link to their pages."""
from __future__ import annotations

import os
import re

import orjson
import pytest

from app.dashboard.backoffice.resources import csrf_token

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
HOOK = "https://hooks.partner.example.com/insurance/events/very/long/path/that-the-operator-must-see-whole"


async def get(client, session, path: str, query: str = ""):
    return await client.simulate_get(path, headers=session["headers"], query_string=query)


@pytest.fixture
def heard(admin, make_channel, make_risk_item):
    """A sales dispatch of a channel's item, recorded three times (failed, failed, succeeded): the
    webhooks trigger queues one event per outcome for each of the channel's two endpoints; the
    deliveries are then put in each state a partner's delivery can be in."""
    other_hook = "https://second.partner.example.com/hook"
    channel = make_channel(integration_payload={"webhooks": [HOOK, other_hook]})
    admin.execute("INSERT INTO webhooks.secrets (channel_id, salt) VALUES (%s, %s)", (channel["id"], os.urandom(32)))
    item = make_risk_item(channel_id=channel["id"])
    emission = admin.execute(
        """INSERT INTO insurance.integration_emissions (risk_item_id, provider, event, status, attempts, next_retry_at,
                                                         error_history)
           VALUES (%s, 'PROVIDER_A', 'SALES_DISPATCH', 'FAILED', 1, now() + interval '1 hour', %s) RETURNING *""",
        (item["id"], orjson.dumps([{"code": "PROVIDER_UNAVAILABLE", "message": "503"}]).decode())).fetchone()
    admin.execute("UPDATE insurance.integration_emissions SET status = 'SUCCESS', attempts = 2, next_retry_at = NULL, "
                  "external_id = 'EXT-HEARD' WHERE id = %s", (emission["id"],))
    rows = admin.execute("SELECT id, url, body ->> 'type' AS type FROM outbox.http_requests "
                         "WHERE channel_id = %s ORDER BY id", (channel["id"],)).fetchall()
    assert [r["type"] for r in rows] == ["emission.failed"] * 2 + ["emission.succeeded"] * 2, rows
    admin.execute("UPDATE outbox.http_requests SET delivered_at = now(), attempts = 1, last_status = 200 WHERE id = %s",
                  (rows[0]["id"],))
    admin.execute("UPDATE outbox.http_requests SET dead_at = now(), attempts = 20, last_status = 410, "
                  "last_error = 'Gone' WHERE id = %s", (rows[1]["id"],))
    admin.execute("UPDATE outbox.http_requests SET attempts = 2, last_status = 500, last_error = 'boom', "
                  "deliver_after = now() + interval '1 day' WHERE id = %s", (rows[2]["id"],))
    admin.execute("UPDATE outbox.http_requests SET deliver_after = now() + interval '1 day' WHERE id = %s",
                  (rows[3]["id"],))
    yield {"channel": channel, "item": item, "emission": emission, "rows": rows}
    admin.execute("UPDATE outbox.http_requests SET delivered_at = coalesce(delivered_at, now()) WHERE channel_id = %s",
                  (channel["id"],))


def deliveries(html: str) -> list[tuple[str, str]]:
    """(delivery id, state) of every row of the page's webhook table."""
    table = re.search(r"<table data-webhooks>.*?</table>", html, re.DOTALL).group()
    return re.findall(r'<tr><td class="id">(\d+)</td>.*?badge-webhook-[a-z]+">([a-z]+)</span>', table, re.DOTALL)


async def test_the_emission_page_names_the_channel_and_every_delivery_with_its_state(client, session, heard):
    html = (await get(client, session, f"/backoffice/emissions/{heard['emission']['id']}")).text
    assert f"<dd data-channel>{heard['channel']['name']}</dd>" in html
    assert deliveries(html) == [(str(r["id"]), state) for r, state in
                                zip(heard["rows"], ("delivered", "dead", "failing", "pending"))]
    assert HOOK in html, "the partner's whole URL"
    assert "410 Gone" in html and "500 boom" in html


async def test_the_risk_item_page_lists_the_deliveries_of_its_emissions(client, session, heard):
    html = (await get(client, session, f"/backoffice/risk-items/{heard['item']['id']}")).text
    assert f"What the partner heard ({heard['channel']['name']})" in html
    assert len(deliveries(html)) == 4
    assert f'<a href="/backoffice/emissions/{heard["emission"]["id"]}">{heard["emission"]["id"]}</a>' in html


async def test_an_item_of_no_channel_says_so(client, session, make_risk_item, make_emission):
    em = make_emission(make_risk_item()["id"], status="FAILED")
    html = (await get(client, session, f"/backoffice/emissions/{em['id']}")).text
    assert "<dd data-channel>— <span class=\"muted\">(made by an operator)</span></dd>" in html
    assert "No webhook delivery: this emission sent no event to a partner." in html


async def test_the_outbox_names_the_channel_and_shows_a_partners_whole_url(client, session, heard):
    html = (await get(client, session, "/backoffice/outbox", "state=dead")).text
    row = re.search(rf'<td>{heard["rows"][1]["id"]}</td>.*?</tr>', html, re.DOTALL)
    assert row, "the dead delivery is listed"
    assert f'<code class="url">{heard["rows"][1]["url"]}</code>' in row.group() and heard["channel"]["name"] in row.group()
    assert heard["channel"]["id"] not in row.group(), "the name, not the raw uuid"


async def test_audit_targets_link_to_their_pages(client, session, make_risk_item, make_emission, admin):
    em = make_emission(make_risk_item()["id"], status="ABANDONED")
    body = f"id={em['id']}&csrf={csrf_token(session['token'])}"
    assert (await client.simulate_post("/backoffice/emissions/retry", body=body,
                                       headers={**session["headers"], **FORM})).status_code == 303
    html = (await get(client, session, "/backoffice/audit")).text
    row = re.search(r"<tr><td>.*?<code>emissions.retry</code>.*?</tr>", html, re.DOTALL).group()
    assert f'<a href="/backoffice/emissions/{em["id"]}">{em["id"]}</a>' in row
