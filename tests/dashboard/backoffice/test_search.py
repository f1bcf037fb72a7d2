"""What an operator on call types into the search box (issue 21): a policy number, a risk item
id or uid, an emission id, the insurer's external id, a holder's or beneficiary's e-mail. One
match opens the risk item page; several are listed. The pages show what a caller quotes: the
policy number, the external id, the package by name, the channel, times in UTC."""
from __future__ import annotations

import re

import pytest

from tests.conftest import unique
from tests.dashboard.backoffice.test_pages import cookie, get


@pytest.fixture
def policy(make_package, make_risk_item, make_emission, make_channel, admin):
    """A policy sold through a channel, with a holder and a beneficiary, and two emissions."""
    package = make_package(name="Travel gold", sales="PROVIDER_A", post_sales="PROVIDER_B")
    channel = make_channel()
    holder, beneficiary = f"{unique('holder')}@example.com", f"{unique('kid')}@example.com"
    item = make_risk_item(package=package, channel_id=channel["id"], holder_email=holder,
                          policy_uid=unique("DEMO").upper(),
                          beneficiaries=[{"name": "Kid", "email": beneficiary, "share": 20}])
    sold = make_emission(item["id"], provider="PROVIDER_A", event="SALES_DISPATCH", status="SUCCESS",
                         external_id=unique("PA-TRA").upper())
    failed = make_emission(item["id"], provider="MAIL_PROVIDER", event="POLICY_CREATED")
    return {"item": item, "package": package, "channel": channel, "holder": holder, "beneficiary": beneficiary,
            "sold": sold, "failed": failed}


async def test_each_kind_of_reference_opens_the_risk_item(client, session, policy):
    item = policy["item"]
    for query in (item["policy_uid"], item["policy_uid"].lower(), str(item["uid"]), policy["sold"]["external_id"],
                  policy["holder"], policy["beneficiary"].upper(), f"  {item['policy_uid']} "):
        resp = await client.simulate_get("/backoffice/search", params={"q": query}, headers=cookie(session))
        assert resp.status_code == 303, (query, resp.status_code, resp.text[:300])
        assert resp.headers["location"] == f"/backoffice/risk-items/{item['id']}", query
    # A number may be this item's id and another item's emission id (or the reverse): then
    # both are listed, each saying what matched.
    for query, matched in ((str(item["id"]), "risk item id"), (str(policy["failed"]["id"]), "emission id")):
        resp = await client.simulate_get("/backoffice/search", params={"q": query}, headers=cookie(session))
        if resp.status_code == 303:
            assert resp.headers["location"] == f"/backoffice/risk-items/{item['id']}", query
        else:
            row = re.search(rf'<tr><td><a href="/backoffice/risk-items/{item["id"]}">.*?</tr>', resp.text, re.DOTALL)
            assert row and matched in row.group(), (query, resp.text[:500])


async def test_several_matches_are_listed_and_none_says_so(client, session, make_risk_item, make_package):
    email = f"{unique('twice')}@example.com"
    first, second = make_risk_item(holder_email=email), make_risk_item(holder_email=email)
    resp = await client.simulate_get("/backoffice/search", params={"q": email}, headers=cookie(session))
    assert resp.status_code == 200
    for item in (first, second):
        assert f'href="/backoffice/risk-items/{item["id"]}"' in resp.text and item["policy_uid"] in resp.text
    assert "2 risk items" in resp.text
    none = await client.simulate_get("/backoffice/search", params={"q": "NO-SUCH-POLICY-42"}, headers=cookie(session))
    assert none.status_code == 200 and "Nothing matches" in none.text
    empty = await client.simulate_get("/backoffice/search", headers=cookie(session))
    assert empty.status_code == 200 and 'name="q"' in empty.text
    nul = await client.simulate_get("/backoffice/search", query_string="q=a%00b", headers=cookie(session))
    assert nul.status_code == 400
    assert (await client.simulate_get("/backoffice/search", params={"q": "x"})).status_code == 303, "login first"


@pytest.mark.parametrize("path", ["/backoffice/emissions", "/backoffice/outbox", "/backoffice/audit",
                                  "/backoffice/packages", "/backoffice/search"])
async def test_every_page_has_the_search_box(client, session, path):
    html = (await get(client, session, path)).text
    assert 'action="/backoffice/search"' in html and 'role="search"' in html and 'name="q"' in html


async def test_the_risk_item_page_shows_package_channel_beneficiaries_and_every_emission(client, session, policy):
    item = policy["item"]
    html = (await get(client, session, f"/backoffice/risk-items/{item['id']}")).text
    assert item["policy_uid"] in html and str(item["uid"]) in html
    assert "Travel gold" in html and policy["package"]["uid"] in html, "the package by name and uid"
    assert policy["channel"]["name"] in html
    assert policy["holder"] in html and policy["beneficiary"] in html and "20" in html
    for emission in (policy["sold"], policy["failed"]):
        assert f'href="/backoffice/emissions/{emission["id"]}"' in html
    assert policy["sold"]["external_id"] in html
    assert "Package 1" not in html and not re.search(r"<dd>\d+</dd>", html), "never a bare package id"


async def test_emission_lists_show_the_policy_number_and_external_id_with_times_in_utc(client, session, policy):
    html = (await get(client, session, "/backoffice/emissions?provider=PROVIDER_A&event=SALES_DISPATCH")).text
    item = policy["item"]
    assert f'<a href="/backoffice/risk-items/{item["id"]}">{item["policy_uid"]}</a>' in html
    assert f'<a href="/backoffice/emissions/{policy["sold"]["id"]}">{policy["sold"]["external_id"]}</a>' in html
    times = re.findall(r"<time datetime=\"[^\"]+\">([^<]+)</time>", html)
    assert times and all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", t) for t in times), times


async def test_the_packages_page_lists_sales_and_post_sales_integrations(client, session, policy):
    html = (await get(client, session, "/backoffice/packages")).text
    assert "Post-sales Integration" in html and "Sales Integration" in html
    row = re.search(rf"<tr><td><code>{re.escape(policy['package']['uid'])}</code>.*?</tr>", html, re.DOTALL).group()
    assert "Travel gold" in row and "PROVIDER_A" in row and "PROVIDER_B" in row and "travel" in row
    assert policy["channel"]["name"] in row or "—" in row


async def test_a_policy_number_prefix_finds_it_and_the_page_says_what_it_searched(client, session, make_risk_item):
    """Issue 30: an operator read the first characters of a policy number on the phone and the
    exact search found nothing, without saying what it had looked for."""
    stem = unique("PFX").upper()
    first, second = (make_risk_item(policy_uid=f"{stem}-{n}") for n in ("0001", "0002"))
    other = make_risk_item(policy_uid=f"{unique('PFY').upper()}-0001")
    listed = await client.simulate_get("/backoffice/search", params={"q": stem.lower()}, headers=cookie(session))
    assert listed.status_code == 200
    for item in (first, second):
        row = re.search(rf'<tr><td><a href="/backoffice/risk-items/{item["id"]}">.*?</tr>', listed.text, re.DOTALL)
        assert row and "policy number prefix" in row.group()
    assert f'href="/backoffice/risk-items/{other["id"]}"' not in listed.text
    said = re.search(r"<p data-searched>(.*?)</p>", listed.text, re.DOTALL).group(1)
    assert "policy number, policy number prefix" in said and stem.lower() in said and "begins with it" in said
    longer = await client.simulate_get("/backoffice/search", params={"q": f"{stem}-000"}, headers=cookie(session))
    assert longer.status_code == 200 and "2 risk items" in longer.text, "both still begin with it"
    exact = await client.simulate_get("/backoffice/search", params={"q": f"{stem}-0002"}, headers=cookie(session))
    assert exact.headers["location"] == f"/backoffice/risk-items/{second['id']}"
    # Characters LIKE would take as wildcards are plain characters of the prefix.
    none = await client.simulate_get("/backoffice/search", params={"q": f"{stem[:-2]}%_"}, headers=cookie(session))
    assert "Nothing matches" in none.text
