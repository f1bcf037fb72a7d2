"""Partner webhooks end to end (issue 20): real processes (sandbox, API, worker) and receivers
started here; every delivery checked with the `standardwebhooks` PyPI library and the secret
that `channels create` printed.

Short settings: emission backoff 1-2 s, webhook backoff 1-2 s, 3 outbox attempts, a webhook
deadline of 2 s, a worker lease of 10 s.
"""
from __future__ import annotations

import contextlib
import http.server
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from tests.conftest import ROOT, free_port, unique
from tests.fixtures.pipeline import Stack, start_stack, wait_for

SETTINGS = {"INTEGRATION_MAX_ATTEMPTS": "3", "INTEGRATION_RETRY_BASE_SECONDS": "1", "INTEGRATION_RETRY_CAP_SECONDS": "2",
            "WEBHOOK_RETRY_BASE_SECONDS": "1", "WEBHOOK_RETRY_CAP_SECONDS": "2", "WEBHOOK_TIMEOUT": "2",
            "OUTBOX_MAX_ATTEMPTS": "3", "WORKER_LEASE_SECONDS": "10"}


@pytest.fixture(scope="module")
def wstack(admin) -> Iterator[Stack]:
    with start_stack(**SETTINGS) as started:
        yield started


@pytest.fixture(scope="module")
def worker(wstack) -> Iterator[subprocess.Popen]:
    with wstack.worker() as proc:
        yield proc


# ---------------------------------------------------------------- helpers

def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def make_partner(stack: Stack, make_package, webhooks: list, branches=("v1", "integrations/v1", "integrations/v2"),
                 env: dict[str, str] | None = None) -> dict[str, Any]:
    """A channel made by `channels create`, selling a PROVIDER_A package: {id, apiKey,
    webhookSecret, package}."""
    package = make_package(variants=("travel",), sales="PROVIDER_A")
    args = ["channels", "create", "--name", unique("partner"), "--package", package["uid"],
            "--integration-payload", orjson.dumps({"webhooks": webhooks}).decode()]
    for branch in branches:
        args += ["--branch", branch]
    done = cli(env or stack.env, *args)
    assert done.returncode == 0, done.stderr
    return {**orjson.loads(done.stdout), "package": package}


def insert_items(admin, partner: dict | None, package: dict, count: int = 1) -> list[dict]:
    """Items of the partner's channel (None: no channel), each with a holder, one statement."""
    email = f"{uuid.uuid4().hex[:10]}@example.com"
    with admin.transaction():
        items = admin.execute(
            """INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant, insured_subject)
               SELECT %s, %s, %s || '-' || n, 'travel', %s FROM generate_series(1, %s) n RETURNING *""",
            (package["id"], partner and partner["id"], unique("pol"),
             orjson.dumps({"name": "Ada Lovelace", "email": email}).decode(), count)).fetchall()
        for item in items:
            admin.execute("""INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
                             VALUES (%s, 'Ada Lovelace', %s, true, 100)""", (item["id"], email))
    return items


def received(stack: Stack, name: str) -> list[dict]:
    return httpx.get(f"{stack.sandbox}/_sandbox/webhooks", params={"name": name}).json()["webhooks"]


def verify(secret: str, delivery: dict) -> dict:
    """The event, verified by the standardwebhooks library over the raw body and the headers."""
    return Webhook(secret).verify(delivery["raw"], delivery["headers"])


def sandbox_hook(stack: Stack) -> tuple[str, str]:
    name = f"p-{uuid.uuid4().hex[:10]}"
    return name, f"{stack.sandbox}/_sandbox/webhooks/{name}"


def partner_token(stack: Stack, partner: dict, branch: str = "integrations/v1") -> dict[str, str]:
    answer = httpx.get(f"{stack.api}/api/gateway/{branch}/auth/authorize", headers={"x-api-key": partner["apiKey"]})
    assert answer.status_code == 200, answer.text
    return {"Authorization": f"Bearer {answer.json()['data']['access_token']}"}


class Receiver:
    """A partner endpoint started by the test: answers from a script of statuses (then 204),
    records every request; `stop()` closes its port (a partner that is down)."""

    def __init__(self, port: int | None = None, answers: list[tuple[int, dict[str, str]]] | None = None) -> None:
        self.port = port or free_port()
        self.answers = list(answers or [])
        self.requests: list[dict[str, Any]] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.requests.append({"path": self.path, "raw": raw.decode(),
                                          "headers": {k.lower(): v for k, v in self.headers.items()}})
                status, headers = receiver.answers.pop(0) if receiver.answers else (204, {})
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextlib.contextmanager
def receiver(**kwargs: Any) -> Iterator[Receiver]:
    r = Receiver(**kwargs)
    try:
        yield r
    finally:
        r.stop()


def delivery_rows(admin, channel_id: str) -> list[dict]:
    return admin.execute("SELECT * FROM outbox.http_requests WHERE channel_id = %s ORDER BY id",
                         (channel_id,)).fetchall()


# ---------------------------------------------------------------- the events

def test_an_issued_policy_is_heard_signed_with_the_printed_secret(wstack, worker, admin, make_package):
    name, url = sandbox_hook(wstack)
    partner = make_partner(wstack, make_package, [url])
    assert partner["webhookSecret"].startswith("whsec_")
    [item] = insert_items(admin, partner, partner["package"])
    [delivery] = wait_for(lambda: received(wstack, name), what="the webhook at the partner")
    event = verify(partner["webhookSecret"], delivery)
    em = admin.execute("SELECT * FROM insurance.integration_emissions WHERE risk_item_id = %s", (item["id"],)).fetchone()
    assert event["type"] == "emission.succeeded" and event["timestamp"]
    assert event["data"] == {"emissionId": em["id"], "riskItemId": item["id"], "riskItemUid": str(item["uid"]),
                             "policyUid": item["policy_uid"], "provider": "PROVIDER_A", "event": "SALES_DISPATCH",
                             "status": "SUCCESS", "externalId": em["external_id"], "attempts": 1,
                             "nextRetryAt": None, "error": None}
    assert delivery["headers"]["webhook-id"].startswith("msg_")
    with pytest.raises(WebhookVerificationError):
        Webhook("whsec_" + "A" * 43 + "=").verify(delivery["raw"], delivery["headers"])
    # The partner's view: delivered, with the event id it received.
    listed = wait_for(lambda: (r := httpx.get(f"{wstack.api}/api/gateway/integrations/v1/webhook-deliveries",
                                              headers=partner_token(wstack, partner)).json()["data"]["items"])
                      and r[0]["status"] == "delivered" and r, what="the delivery listed as delivered")
    assert listed[0]["eventId"] == delivery["headers"]["webhook-id"] and listed[0]["type"] == "emission.succeeded"
    assert listed[0]["riskItemUid"] == str(item["uid"]) and listed[0]["lastHttpStatus"] == 204


def test_a_retryable_failure_carries_next_retry_at_and_an_abandoned_one_its_code(wstack, worker, admin, make_package):
    name, url = sandbox_hook(wstack)
    partner = make_partner(wstack, make_package, [url])
    wstack.fault(provider="PROVIDER_A", count=1, status=503)
    [_item] = insert_items(admin, partner, partner["package"])
    deliveries = wait_for(lambda: (d := received(wstack, name)) and len(d) >= 2 and d, what="failed then succeeded")
    failed, succeeded = (verify(partner["webhookSecret"], d) for d in deliveries[:2])
    assert failed["type"] == "emission.failed" and failed["data"]["status"] == "FAILED"
    assert failed["data"]["nextRetryAt"] is not None and failed["data"]["attempts"] == 1
    assert failed["data"]["error"] == {"code": "PROVIDER_UNAVAILABLE",
                                       "message": "The insurer could not take the policy yet; it will be retried."}
    assert succeeded["type"] == "emission.succeeded" and succeeded["data"]["attempts"] == 2
    assert deliveries[0]["headers"]["webhook-id"] != deliveries[1]["headers"]["webhook-id"], "two events, two ids"

    wstack.fault(provider="PROVIDER_A", count=1, status=400, body="<b>raw provider text</b> secret-ish")
    [refused] = insert_items(admin, partner, partner["package"])
    [abandoned] = wait_for(lambda: [e for d in received(wstack, name) if (e := verify(partner["webhookSecret"], d))
                                    ["data"]["riskItemId"] == refused["id"]], what="the abandoned event")
    em = admin.execute("SELECT * FROM insurance.integration_emissions WHERE risk_item_id = %s", (refused["id"],)).fetchone()
    assert abandoned["type"] == "emission.abandoned" and abandoned["data"]["status"] == "ABANDONED"
    assert abandoned["data"]["error"]["code"] == em["error_history"][-1]["code"] and abandoned["data"]["error"]["code"]
    assert abandoned["data"]["error"]["message"] == "The insurer did not take the policy."
    assert abandoned["data"]["nextRetryAt"] is None
    assert "raw provider text" not in orjson.dumps(abandoned).decode()


def test_an_endpoint_that_chooses_its_events_gets_only_those(wstack, worker, admin, make_package):
    name, url = sandbox_hook(wstack)
    other, other_url = sandbox_hook(wstack)
    partner = make_partner(wstack, make_package, [url, {"url": other_url, "events": ["emission.abandoned"]}])
    [_item] = insert_items(admin, partner, partner["package"])
    wait_for(lambda: received(wstack, name), what="the succeeded event")
    time.sleep(1)
    assert received(wstack, other) == []


# ---------------------------------------------------------------- delivery

def test_a_receiver_answering_500_twice_gets_the_event_on_the_third_try_with_one_webhook_id(
        wstack, worker, admin, make_package):
    with receiver(answers=[(500, {}), (500, {})]) as partner_end:
        partner = make_partner(wstack, make_package, [partner_end.url])
        insert_items(admin, partner, partner["package"])
        wait_for(lambda: len(partner_end.requests) >= 3, what="three tries")
        time.sleep(1.5)
    assert len(partner_end.requests) == 3, "delivered on the third: no fourth"
    ids = {r["headers"]["webhook-id"] for r in partner_end.requests}
    assert len(ids) == 1
    for request in partner_end.requests:
        assert verify(partner["webhookSecret"], request)["type"] == "emission.succeeded"
    stamps = [int(r["headers"]["webhook-timestamp"]) for r in partner_end.requests]
    assert stamps == sorted(stamps)
    [row] = delivery_rows(admin, partner["id"])
    assert row["delivered_at"] is not None and row["attempts"] == 3 and row["last_status"] == 204


def test_a_receiver_that_stays_down_is_a_dead_letter_until_outbox_retry(wstack, worker, admin, make_package):
    port = free_port()
    down = f"http://127.0.0.1:{port}/hook"
    partner = make_partner(wstack, make_package, [down])
    insert_items(admin, partner, partner["package"])
    row = wait_for(lambda: (rows := delivery_rows(admin, partner["id"])) and rows[0]["dead_at"] and rows[0],
                   timeout=40, what="the delivery dead after 3 attempts")
    assert row["attempts"] == 3 and row["delivered_at"] is None and "WEBHOOK_UNREACHABLE" in row["last_error"]
    listed = cli(wstack.env, "outbox", "list", "--dead", "--limit", "1000")
    assert listed.returncode == 0, listed.stderr
    [mine] = [r for r in orjson.loads(listed.stdout) if r["id"] == row["id"]]
    assert mine["channelId"] == partner["id"] and mine["url"] == down
    with receiver(port=port) as back:
        retried = cli(wstack.env, "outbox", "retry", str(row["id"]))
        assert retried.returncode == 0 and orjson.loads(retried.stdout) == [{"id": row["id"], "result": "queued"}]
        wait_for(lambda: back.requests, what="the retried delivery")
        time.sleep(1)
    assert len(back.requests) == 1
    assert verify(partner["webhookSecret"], back.requests[0])["type"] == "emission.succeeded"
    assert back.requests[0]["headers"]["webhook-id"] == row["headers"]["webhook-id"]


def test_a_redirect_is_not_followed(wstack, worker, admin, make_package):
    name, target = sandbox_hook(wstack)
    with receiver(answers=[(307, {"Location": target})] * 5) as partner_end:
        partner = make_partner(wstack, make_package, [partner_end.url])
        insert_items(admin, partner, partner["package"])
        row = wait_for(lambda: (rows := delivery_rows(admin, partner["id"])) and rows[0]["last_status"] and rows[0],
                       what="the first try recorded")
    assert row["last_status"] == 307 and row["delivered_at"] is None and "WEBHOOK_REDIRECT" in row["last_error"]
    time.sleep(1)
    assert received(wstack, name) == [], "the redirect's target never heard of it"


def test_a_delivery_has_a_total_deadline(wstack, worker, admin, make_package):
    name, url = sandbox_hook(wstack)
    httpx.put(f"{wstack.sandbox}/_sandbox/webhooks/{name}", json={"delay": 8}).raise_for_status()
    partner = make_partner(wstack, make_package, [url])
    insert_items(admin, partner, partner["package"])
    wait_for(lambda: received(wstack, name), what="the delivery to arrive")
    t0 = time.monotonic()
    row = wait_for(lambda: (rows := delivery_rows(admin, partner["id"])) and rows[0]["last_error"] and rows[0],
                   what="the try given up")
    assert time.monotonic() - t0 < 6, "given up at WEBHOOK_TIMEOUT (2 s), not at the answer (8 s)"
    assert row["last_error"].startswith("WEBHOOK_TIMEOUT") and row["delivered_at"] is None


def test_a_slow_endpoint_does_not_delay_another_partners_deliveries(wstack, worker, admin, make_package):
    slow_name, slow_url = sandbox_hook(wstack)
    httpx.put(f"{wstack.sandbox}/_sandbox/webhooks/{slow_name}", json={"delay": 1.8}).raise_for_status()
    fast_name, fast_url = sandbox_hook(wstack)
    slow = make_partner(wstack, make_package, [slow_url])
    fast = make_partner(wstack, make_package, [fast_url])
    insert_items(admin, slow, slow["package"], count=40)
    time.sleep(0.5)
    t0 = time.monotonic()
    insert_items(admin, fast, fast["package"], count=5)
    wait_for(lambda: len(received(wstack, fast_name)) >= 5, timeout=20, what="the fast partner's five events")
    took = time.monotonic() - t0
    slow_done = len([d for d in received(wstack, slow_name) if d.get("status") == 204])
    assert slow_done < 40, "the slow partner was not slow: the test proves nothing"
    assert took < 10, f"the fast partner waited {took:.1f} s behind the slow one"


# ---------------------------------------------------------------- secrets and channels

def test_after_rotation_deliveries_verify_with_the_new_secret_and_within_the_overlap_the_old(
        wstack, worker, admin, make_package):
    name, url = sandbox_hook(wstack)
    partner = make_partner(wstack, make_package, [url])
    rotated = cli(wstack.env, "channels", "webhook-secret", "--id", partner["id"])
    assert rotated.returncode == 0, rotated.stderr
    new = orjson.loads(rotated.stdout)["webhookSecret"]
    assert new.startswith("whsec_") and new != partner["webhookSecret"]
    audit = admin.execute("SELECT actor FROM insurance.audit_log WHERE action = 'channels.webhook_secret' "
                          "AND targets @> %s::jsonb", (orjson.dumps([partner["id"]]).decode(),)).fetchall()
    assert len(audit) == 2 and all(a["actor"].startswith("cli:") for a in audit), "created and rotated, audited"
    assert new not in orjson.dumps(audit).decode()
    time.sleep(5.5)  # the worker's secret cache
    insert_items(admin, partner, partner["package"])
    [delivery] = wait_for(lambda: received(wstack, name), what="the webhook")
    assert delivery["headers"]["webhook-signature"].count("v1,") == 2
    assert verify(new, delivery)["type"] == "emission.succeeded"
    assert verify(partner["webhookSecret"], delivery)["type"] == "emission.succeeded"
    # Past the overlap only the new one signs.
    admin.execute("UPDATE webhooks.secrets SET rotated_at = now() - interval '2 days' WHERE channel_id = %s",
                  (partner["id"],))
    time.sleep(5.5)
    insert_items(admin, partner, partner["package"])
    later = wait_for(lambda: (d := received(wstack, name)) and len(d) >= 2 and d[1], what="the second webhook")
    assert later["headers"]["webhook-signature"].count("v1,") == 1
    verify(new, later)
    with pytest.raises(WebhookVerificationError):
        verify(partner["webhookSecret"], later)


def test_another_channels_items_never_reach_a_partner(wstack, worker, admin, make_package):
    name_a, url_a = sandbox_hook(wstack)
    name_b, url_b = sandbox_hook(wstack)
    a = make_partner(wstack, make_package, [url_a])
    b = make_partner(wstack, make_package, [url_b])
    insert_items(admin, a, a["package"], count=3)
    insert_items(admin, None, a["package"], count=2)  # no channel: nobody hears
    wait_for(lambda: len(received(wstack, name_a)) >= 3, what="a's three events")
    time.sleep(1)
    assert received(wstack, name_b) == []
    assert delivery_rows(admin, b["id"]) == []
    mine = httpx.get(f"{wstack.api}/api/gateway/integrations/v2/webhook-deliveries", params={"limit": 10},
                     headers=partner_token(wstack, b, "integrations/v2")).json()
    assert "data" in mine, mine
    assert mine["data"]["items"] == [] and mine["data"]["nextCursor"] is None
    a_first = delivery_rows(admin, a["id"])[0]["id"]
    stolen = httpx.post(f"{wstack.api}/api/gateway/integrations/v1/webhook-deliveries/{a_first}/redeliver",
                        headers=partner_token(wstack, b))
    assert stolen.status_code == 404 and stolen.json()["error"]["code"] == "WEBHOOK_DELIVERY_NOT_FOUND"


def test_redeliver_sends_the_same_event_again(wstack, worker, admin, make_package):
    name, url = sandbox_hook(wstack)
    partner = make_partner(wstack, make_package, [url])
    insert_items(admin, partner, partner["package"])
    [first] = wait_for(lambda: received(wstack, name), what="the webhook")
    [row] = wait_for(lambda: [r for r in delivery_rows(admin, partner["id"]) if r["delivered_at"]], what="delivered")
    again = httpx.post(f"{wstack.api}/api/gateway/integrations/v2/webhook-deliveries/{row['id']}/redeliver",
                       headers=partner_token(wstack, partner, "integrations/v2"))
    assert again.status_code == 202, again.text
    assert again.json()["data"]["status"] == "pending" and again.json()["data"]["id"] != row["id"]
    second = wait_for(lambda: (d := received(wstack, name)) and len(d) >= 2 and d[1], what="the redelivery")
    assert second["headers"]["webhook-id"] == first["headers"]["webhook-id"]
    assert verify(partner["webhookSecret"], second) == verify(partner["webhookSecret"], first)


@pytest.mark.parametrize("url, code", [
    ("http://hooks.example.com/x", "WEBHOOK_URL_NOT_HTTPS"),
    ("https://127.0.0.1/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),
    ("https://10.0.0.7/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),
    ("https://169.254.169.254/latest/meta-data/", "WEBHOOK_ADDRESS_NOT_PUBLIC"),
])
def test_a_private_or_metadata_url_is_refused_outside_development(wstack, admin, make_package, url, code):
    production = {**wstack.env, "APP_ENV": "production"}
    package = make_package(variants=("travel",))
    done = cli(production, "channels", "create", "--name", unique("bad"), "--branch", "integrations/v1",
               "--package", package["uid"], "--integration-payload", orjson.dumps({"webhooks": [url]}).decode())
    assert done.returncode == 2 and code in done.stderr, done.stderr
    assert "apiKey" not in done.stdout


async def test_a_worker_outside_development_refuses_a_private_address_at_delivery():
    """The address is checked again when the row is sent (DNS may have changed since the save):
    nothing reaches a private endpoint, and the row is retried, not delivered."""
    from app.outbox.webhooks import EndpointClients, WebhookSender
    from app.webhooks import derive_secret
    with receiver() as private:
        async with EndpointClients(4, 10.0) as client:
            secret = derive_secret("k" * 40, b"salt")
            deliverer = WebhookSender(client, lambda channel: _async([secret]), public_only=True)
            row = {"id": 1, "url": f"https://127.0.0.1:{private.port}/hook", "attempts": 1, "body": {"type": "x"},
                   "headers": {"X-Outbox-Webhook": str(uuid.uuid4()), "webhook-id": "msg_1"}}
            result = await deliverer.deliver(row)
            metadata = await deliverer.deliver({**row, "url": "https://169.254.169.254/latest/meta-data/"})
    assert result["retry"] is True and result["error"].startswith("WEBHOOK_ADDRESS_NOT_PUBLIC")
    assert metadata["error"].startswith("WEBHOOK_ADDRESS_NOT_PUBLIC")
    assert private.requests == []


async def _async(value):
    return value


def test_at_most_64_kib_of_an_answer_is_read_and_little_is_kept(wstack, worker, admin, make_package):
    big = "x" * (10 * 1024 * 1024)
    sandbox_hook(wstack)

    class Huge(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(500)
            self.send_header("Content-Length", str(len(big)))
            self.end_headers()
            with contextlib.suppress(OSError):
                self.wfile.write(big.encode())

        def log_message(self, *args) -> None:
            pass

    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Huge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        partner = make_partner(wstack, make_package, [f"http://127.0.0.1:{port}/hook"])
        insert_items(admin, partner, partner["package"])
        row = wait_for(lambda: (rows := delivery_rows(admin, partner["id"])) and rows[0]["last_status"] and rows[0],
                       what="the 500 recorded")
    finally:
        server.shutdown()
        server.server_close()
    assert row["last_status"] == 500 and len(row["last_error"]) <= 500


# A worker killed mid-batch: tests/integrations/test_webhook_kills.py, on a stack where no other
# worker runs (this module's worker would take the rows first).


# ---------------------------------------------------------------- the operator's view

def test_the_back_office_outbox_shows_a_webhook_with_its_channel(wstack, admin, make_package):
    from tests.credentials import login_body, make_dashboard_user
    partner = make_partner(wstack, make_package, [f"http://127.0.0.1:{free_port()}/hook"])
    [item] = insert_items(admin, partner, partner["package"])
    # No worker here: the dispatch waits; make the emission's outcome by hand, as the API would.
    admin.execute("SELECT integrations.record_emission(%s, 'PROVIDER_A', 'SALES_DISPATCH', "
                  "'{\"status\": \"SUCCESS\", \"externalId\": \"BO-1\"}')", (item["id"],))
    [row] = delivery_rows(admin, partner["id"])
    user = make_dashboard_user(admin)
    with httpx.Client(base_url=wstack.api) as client:
        assert client.post("/api/auth/login", content=login_body(user),
                           headers={"Content-Type": "application/json"}).status_code == 200
        page = client.get("/backoffice/outbox", params={"cursor": row["id"] - 1}).text
    # The channel by its name (issue 30: no longer a raw uuid), the event beside it.
    assert partner["name"] in page and "emission.succeeded" in page
