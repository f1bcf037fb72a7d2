"""Every CHECK speaks to a person (issue 31): a value a table's or a domain's CHECK refuses answers
400 VALIDATION_ERROR with the field and the rule's sentence, never SQL text. The sentence is the
constraint's COMMENT in the database, beside the rule: the gateway's create (gateway._broken_rules)
and the app's mapper of any other route (app/errors.py CheckRules) both read it.

The walk: every CHECK of the tables that the HTTP surfaces write from a body (and every domain
check) is either broken through a real request below, or listed in UNREACHABLE with the reason,
so a new rule fails here until it has its sentence and its case. (On main: a 5,000-character
policy_uid answered `must satisfy ((length(policy_uid) >= 1) AND ...)`.)"""
from __future__ import annotations

import re

import pytest

from tests.conftest import unique
from tests.credentials import holder_bearer, make_channel

# Tables a surface writes from what a client sends.
WRITTEN = ("insurance.risk_items", "insurance.beneficiaries")
# What SQL text looks like in an answer (upper-case keywords as pg_get_expr writes them).
SQL_TEXT = re.compile(r"(?i:must satisfy|constraint|violates|jsonb_typeof|\blength\(|::)|\bCHECK\b|\bAND\b|\bVALUE\b|~")
UNREACHABLE = {
    "risk_items_insured_subject_check": "the body's shape (an object) is checked first: 'must be of JSON type object'",
    "risk_items_metadata_check": "the body's shape (an object) is checked first",
    "risk_items_status_check": "no body sets a status",
}


def checks(admin) -> dict[str, dict]:
    """Every CHECK of WRITTEN and every domain check of our schemas: {name: {relation, comment}}."""
    rows = admin.execute(
        """SELECT c.conname, coalesce(c.conrelid::regclass::text, c.contypid::regtype::text) AS relation,
                  obj_description(c.oid, 'pg_constraint') AS comment
             FROM pg_constraint c
            WHERE c.contype = 'c' AND (c.conrelid = ANY (%s::regclass[])
                  OR (c.contypid <> 0 AND c.connamespace = 'insurance'::regnamespace))""",
        (list(WRITTEN),)).fetchall()
    return {r["conname"]: r for r in rows}


def test_every_check_of_our_schemas_has_a_sentence_and_no_sql(admin):
    rows = admin.execute(
        """SELECT c.conname, obj_description(c.oid, 'pg_constraint') AS comment
             FROM pg_constraint c
            WHERE c.contype = 'c' AND c.connamespace::regnamespace::text
                  IN ('insurance', 'outbox', 'webhooks', 'postsales', 'gateway', 'dashboard')""").fetchall()
    assert len(rows) > 50
    missing = sorted(r["conname"] for r in rows if not r["comment"])
    assert missing == [], "CHECKs without a sentence (COMMENT ON CONSTRAINT ... IS 'must ...')"
    sql = sorted(f"{r['conname']}: {r['comment']}" for r in rows if SQL_TEXT.search(r["comment"]))
    assert sql == []


async def gateway_problems(client, admin, make_package, **broken) -> tuple[list[dict], str]:
    channel = make_channel(admin)
    token = (await client.simulate_get("/api/gateway/v1/auth/authorize",
                                       headers={"x-api-key": channel["key"]})).json["data"]["access_token"]
    package = make_package()
    admin.execute("INSERT INTO insurance.channel_packages (channel_id, package_id) VALUES (%s, %s)",
                  (channel["id"], package["id"]))
    beneficiary = {"name": "Ben", "share": 10, **broken.pop("beneficiary", {})}
    body = {"package_uid": package["uid"], "policy_uid": unique("P"), "variant": "travel",
            "insured_subject": {"name": "Ada"}, "beneficiaries": [beneficiary], **broken}
    resp = await client.simulate_post("/api/gateway/v1/risk-items", json=body,
                                      headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 400 and resp.json["error"]["code"] == "VALIDATION_ERROR", resp.text
    return resp.json["error"]["details"], resp.text


async def holder_problems(client, services, make_risk_item, body: dict) -> tuple[list[dict], str]:
    holder = f"{unique('rules')}@example.com"
    item = make_risk_item(holder_email=holder)
    resp = await client.simulate_post(f"/api/postsales/v1/risk-items/{item['id']}/beneficiaries",
                                      json={"name": "Ben", **body}, headers=holder_bearer(services, holder))
    assert resp.status_code == 400 and resp.json["error"]["code"] == "VALIDATION_ERROR", resp.text
    return resp.json["error"]["details"], resp.text


# constraint -> (surface, what breaks it, the field it names)
CASES = [
    ("risk_items_policy_uid_check", "gateway", {"policy_uid": "p" * 5000}, "policy_uid"),
    ("beneficiaries_name_check", "gateway", {"beneficiary": {"name": ""}}, "beneficiaries[0].name"),
    ("beneficiaries_document_check", "gateway", {"beneficiary": {"document": "d" * 65}}, "beneficiaries[0].document"),
    ("beneficiaries_relationship_check", "gateway", {"beneficiary": {"relationship": "r" * 65}},
     "beneficiaries[0].relationship"),
    ("beneficiaries_share_check", "gateway", {"beneficiary": {"share": -1}}, "beneficiaries[0].share"),
    ("beneficiaries_email_check", "gateway", {"beneficiary": {"email": "not-an-address"}}, "beneficiaries[0].email"),
    ("beneficiaries_check", "gateway", {"beneficiary": {"isHolder": True}}, "beneficiaries[0].email"),
    ("beneficiaries_name_check", "holder", {"name": "n" * 201}, "name"),
    ("beneficiaries_document_check", "holder", {"document": "d" * 65}, "document"),
    ("beneficiaries_relationship_check", "holder", {"relationship": "r" * 65}, "relationship"),
    ("beneficiaries_share_check", "holder", {"share": -1}, "share"),
    ("email_check", "holder", {"email": "NOT an address"}, "email"),  # the domain insurance.email
]


def test_the_walk_covers_every_check_of_the_written_tables(admin):
    covered = {name for name, *_ in CASES} | set(UNREACHABLE)
    assert covered == set(checks(admin)), "a CHECK without a case here (or a case without its CHECK)"


@pytest.mark.parametrize("constraint,surface,broken,field", CASES, ids=[f"{c[1]}-{c[0]}" for c in CASES])
async def test_a_broken_check_names_the_field_with_its_sentence(client, admin, services, make_package,
                                                                 make_risk_item, constraint, surface, broken, field):
    if surface == "gateway":
        problems, text = await gateway_problems(client, admin, make_package, **broken)
    else:
        problems, text = await holder_problems(client, services, make_risk_item, broken)
    sentence = checks(admin)[constraint]["comment"]
    assert {"field": field, "message": sentence} in problems, text
    assert not SQL_TEXT.search(text.replace(sentence, "")), text
