"""JSON is encoded one way on every route (issue 21): a client that greps `"state":"SUCCESS"`
or compares bytes sees the same text whether SQL or Python built the answer. Before, the
holder routes printed `"id" : 1` (SQL `json`), the gateway `"id": 1` (SQL `jsonb`) inside an
envelope written `{"success":true,...` (Python)."""
from __future__ import annotations

import orjson

from tests.fixtures.channels import api, bearer

PS = "/api/postsales/v1"


def one_way(body: bytes) -> bool:
    return body == orjson.dumps(orjson.loads(body))


async def test_every_surface_answers_the_same_encoding(client, services, make_risk_item, make_package,
                                                       make_channel, sell, authorize):
    email = "json.one.way@example.com"
    package = make_package()
    channel = make_channel()
    sell(channel, package)
    item = make_risk_item(package=package, holder_email=email, channel_id=channel["id"])
    holder = {"Authorization": f"Bearer {services.postsales_tokens.issue(email, email=email)}"}
    token = await authorize(channel)
    answers = {
        "holder list": await client.simulate_get(f"{PS}/me/risk-items", headers=holder),
        "holder item": await client.simulate_get(f"{PS}/risk-items/{item['uid']}", headers=holder),
        "holder beneficiaries": await client.simulate_get(f"{PS}/risk-items/{item['id']}/beneficiaries", headers=holder),
        "holder variants": await client.simulate_get(f"{PS}/risk-items/{item['id']}/variants", headers=holder),
        "gateway list": await client.simulate_get(api("v1", "risk-items"), headers=bearer(token)),
        "gateway item": await client.simulate_get(api("v1", f"risk-items/{item['uid']}"), headers=bearer(token)),
        "gateway validator": await client.simulate_get(api("v1", "auth/validator"), headers=bearer(token)),
        "an error": await client.simulate_get(f"{PS}/me/risk-items"),
        "readiness": await client.simulate_get("/readyz"),
    }
    for name, resp in answers.items():
        assert resp.status_code < 500, (name, resp.text)
        assert one_way(resp.content), f"{name}: {resp.text[:300]}"
    assert b'"policy_uid":"' in answers["holder list"].content, "no space after a colon, as a grep expects"
