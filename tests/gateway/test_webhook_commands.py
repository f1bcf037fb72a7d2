"""Issue 29: a channel's webhooks after its creation. `channels webhooks` replaces the endpoints
(checked as at creation, audited, the first ones print the secret once), `channels list` shows
them, a channel without an `integrations/*` branch is refused webhooks (at creation too), and a
partner's redeliveries are limited per channel (429 with Retry-After and X-RateLimit-*) and
audited."""
from __future__ import annotations

import subprocess
import sys
import time

import orjson

from tests.conftest import ROOT, child_environ, unique
from tests.fixtures.channels import api, bearer
from tests.gateway.test_rate_limit import wait_for_a_fresh_minute_if_needed
from tests.test_cli import cli

HOOK = "http://127.0.0.1:9/hooks/"  # development and test: any http URL (no DNS, no delivery here)
REDELIVERIES_PER_MINUTE = 10


def cli_in(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)


def audit_rows(admin, action: str, target: str) -> list[dict]:
    return admin.execute("SELECT * FROM insurance.audit_log WHERE action = %s AND targets ? %s ORDER BY id",
                         (action, target)).fetchall()


def listed(channel_id: str) -> dict:
    done = cli("channels", "list")
    assert done.returncode == 0, done.stderr
    return next(c for c in orjson.loads(done.stdout) if c["id"] == channel_id)


def test_webhooks_replaces_the_endpoints_audited_listed_and_prints_the_first_secret(make_channel, admin):
    channel = make_channel(branches=("v2", "integrations/v2"))
    assert listed(channel["id"])["webhooks"] == []
    done = cli("channels", "webhooks", "--id", channel["id"], "--set", HOOK + "all",
               "--set", HOOK + "failures", "emission.failed", "emission.abandoned", "--actor", "TICKET-29")
    assert done.returncode == 0, done.stderr
    first = orjson.loads(done.stdout)
    expected = [{"url": HOOK + "all", "events": ["emission.succeeded", "emission.failed", "emission.abandoned"]},
                {"url": HOOK + "failures", "events": ["emission.failed", "emission.abandoned"]}]
    assert first["id"] == channel["id"] and first["webhooks"] == expected
    assert first["webhookSecret"].startswith("whsec_"), "a channel's first endpoints get its secret, once"
    assert listed(channel["id"])["webhooks"] == expected
    [row] = audit_rows(admin, "channels.webhooks", channel["id"])
    assert row["result"] == "ok" and row["on_behalf_of"] == "TICKET-29" and row["via"] == "cli"
    assert row["details"]["before"] == [] and row["details"]["webhooks"] == expected

    again = cli("channels", "webhooks", "--id", channel["id"], "--set", HOOK + "new")
    assert again.returncode == 0, again.stderr
    second = orjson.loads(again.stdout)
    assert "webhookSecret" not in second, "the secret is kept: the partner's copy still verifies"
    assert [w["url"] for w in listed(channel["id"])["webhooks"]] == [HOOK + "new"]
    assert admin.execute("SELECT count(*) AS n FROM webhooks.secrets WHERE channel_id = %s",
                         (channel["id"],)).fetchone()["n"] == 1

    none = cli("channels", "webhooks", "--id", channel["id"], "--none")
    assert none.returncode == 0, none.stderr
    assert listed(channel["id"])["webhooks"] == []
    assert len(audit_rows(admin, "channels.webhooks", channel["id"])) == 3


def test_webhooks_without_an_integrations_branch_are_refused_with_a_clear_message(make_channel, make_package, admin):
    channel = make_channel(branches=("v1",))
    done = cli("channels", "webhooks", "--id", channel["id"], "--set", HOOK + "x")
    assert done.returncode == 1
    assert "integrations/" in done.stderr and "branch" in done.stderr, done.stderr
    assert listed(channel["id"])["webhooks"] == [], "nothing changed"
    [row] = audit_rows(admin, "channels.webhooks", channel["id"])
    assert row["result"] == "WEBHOOKS_NEED_INTEGRATIONS_BRANCH"
    assert admin.execute("SELECT count(*) AS n FROM webhooks.secrets WHERE channel_id = %s",
                         (channel["id"],)).fetchone()["n"] == 0

    name = unique("hooks-v1")
    created = cli("channels", "create", "--name", name, "--branch", "v1", "--package", make_package()["uid"],
                  "--integration-payload", orjson.dumps({"webhooks": [HOOK + "y"]}).decode())
    assert created.returncode == 1 and "integrations/" in created.stderr, created.stderr
    assert "apiKey" not in created.stdout
    assert admin.execute("SELECT count(*) AS n FROM insurance.channels WHERE name = %s", (name,)).fetchone()["n"] == 0

    assert cli("channels", "webhooks", "--id", "00000000-0000-4000-8000-000000000000",
               "--set", HOOK + "z").returncode == 1


def test_webhooks_are_checked_as_at_creation(make_channel):
    channel = make_channel(branches=("integrations/v2",))
    production = child_environ(APP_ENV="production")
    for url, code in (("http://hooks.example.com/x", "WEBHOOK_URL_NOT_HTTPS"),
                      ("https://[64:ff9b::127.0.0.1]/x", "WEBHOOK_ADDRESS_NOT_PUBLIC"),
                      ("https://[2002:7f00:1::]/x", "WEBHOOK_ADDRESS_NOT_PUBLIC"),
                      ("https://8.8.8.8:25/x", "WEBHOOK_PORT_NOT_ALLOWED")):
        done = cli_in(production, "channels", "webhooks", "--id", channel["id"], "--set", url)
        assert done.returncode == 2 and code in done.stderr, (url, done.stderr)
    bad_event = cli("channels", "webhooks", "--id", channel["id"], "--set", HOOK, "policy.sold")
    assert bad_event.returncode == 2 and "WEBHOOK_EVENTS_INVALID" in bad_event.stderr
    assert listed(channel["id"])["webhooks"] == []


def _delivery(admin, channel_id: str) -> int:
    """One webhook delivery of the channel, as the emission trigger writes it."""
    return admin.execute(
        """INSERT INTO outbox.http_requests (url, body, headers, channel_id)
           VALUES (%s, '{"type": "emission.succeeded", "data": {}}', jsonb_build_object(
                     'webhook-id', %s::text, 'X-Outbox-Webhook', %s::text), %s) RETURNING id""",
        (HOOK + "redeliver", unique("msg"), channel_id, channel_id)).fetchone()["id"]


async def test_redelivery_is_limited_per_channel_and_audited(client, make_channel, authorize, admin):
    # Both channels have the endpoint their delivery went to (a removed one is not redelivered).
    endpoints = {"webhooks": [HOOK + "redeliver"]}
    channel = make_channel(branches=("integrations/v2",), integration_payload=endpoints)
    other = make_channel(branches=("integrations/v1",), integration_payload=endpoints)
    delivery, theirs = _delivery(admin, channel["id"]), _delivery(admin, other["id"])
    token, their_token = await authorize(channel, "integrations/v2"), await authorize(other, "integrations/v1")
    url = api("integrations/v2", f"webhook-deliveries/{delivery}/redeliver")
    wait_for_a_fresh_minute_if_needed(20)
    answers = [await client.simulate_post(url, headers=bearer(token)) for _ in range(REDELIVERIES_PER_MINUTE + 3)]
    assert [a.status_code for a in answers] == [202] * REDELIVERIES_PER_MINUTE + [429] * 3
    refused = answers[-1]
    assert refused.json["error"]["code"] == "RATE_LIMITED"
    retry_after = int(refused.headers["retry-after"])
    assert 1 <= retry_after <= 60 and refused.json["error"]["details"] == {"retryAfter": retry_after}
    assert refused.headers["x-ratelimit-limit"] == str(REDELIVERIES_PER_MINUTE)
    assert refused.headers["x-ratelimit-remaining"] == "0"
    assert 0 < int(refused.headers["x-ratelimit-reset"]) - time.time() <= 60
    queued = admin.execute("SELECT count(*) AS n FROM outbox.http_requests WHERE channel_id = %s",
                           (channel["id"],)).fetchone()["n"]
    assert queued == 1 + REDELIVERIES_PER_MINUTE, "a refused redelivery queues nothing"

    rows = audit_rows(admin, "webhooks.redeliver", channel["id"])
    assert len(rows) == REDELIVERIES_PER_MINUTE, "every accepted redelivery is audited"
    new_ids = {a.json["data"]["id"] for a in answers[:REDELIVERIES_PER_MINUTE]}
    assert {r["details"]["delivery"] for r in rows} == {delivery}
    assert {r["details"]["redelivery"] for r in rows} == new_ids
    assert {r["actor"] for r in rows} == {f"channel:{channel['id']}"} and {r["result"] for r in rows} == {"ok"}

    # Per channel: another partner's redeliveries are counted on their own.
    mine = await client.simulate_post(api("integrations/v1", f"webhook-deliveries/{theirs}/redeliver"),
                                      headers=bearer(their_token))
    assert mine.status_code == 202, mine.text
