"""A person's data end to end (issue 39), on data made through the public paths only: a partner's
gateway calls (a policy where Ada is the holder, another where she is a beneficiary of Bob's),
the worker's dispatch to the insurer (the sandbox) and the partner's webhooks, Ada's login by
e-mail code, a back-office operator's search and page views. Then:

- the scan: every place in the database holding Ada's or Bob's e-mail or document number is named
  by the map (insurance.personal_data);
- `people export`: one document with both items and every role, emissions, login codes with
  their address, audit rows of who looked;
- `people erase`: login history deleted, contract data kept with its reason; a second run changes
  nothing; once the ended policy's retention is over, the retention pass pseudonymizes it;
- `audit --about`: the views, the export and the erasure;
- the logs of the API and the worker name nobody.

The stack (sandbox with its mail catcher, API, worker) runs as real processes whose output goes
to files that the last test reads.
"""
from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import httpx
import orjson
import pytest

from tests.conftest import ROOT, child_environ, free_port, wait_for, wait_http
from tests.privacy import scan

PASSWORD = "correct horse battery staple"


class Stack:
    def __init__(self, env: dict[str, str], api: str, sandbox: str, logs: Path) -> None:
        self.env, self.api, self.sandbox, self.logs = env, api, sandbox, logs

    def cli(self, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "app", *args], env=self.env, cwd=ROOT, input=stdin,
                              capture_output=True, text=True, timeout=60, check=False)
        if check:
            assert done.returncode == 0, done.stderr
        return done

    def log_text(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.logs.glob("*.log")))


@contextlib.contextmanager
def process(args: list[str], env: dict[str, str], log: Path, ready: str | None = None) -> Iterator[None]:
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "app", *args], env=env, cwd=ROOT, stdout=out, stderr=out)
    try:
        if ready:
            wait_http(ready, process=proc)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def stack(admin) -> Iterator[Stack]:
    admin.execute("UPDATE outbox.http_requests SET delivered_at = now(), lease_until = NULL WHERE delivered_at IS NULL")
    sandbox_port, api_port, smtp_port = free_port(), free_port(), free_port()
    sandbox, api = f"http://127.0.0.1:{sandbox_port}", f"http://127.0.0.1:{api_port}"
    env = child_environ(PORT=str(api_port), PUBLIC_BASE_URL=api, CHAT_WEBHOOK_URL=f"{sandbox}/chat/webhook",
                        SANDBOX_SMTP_PORT=str(smtp_port), SMTP_URL=f"smtp://127.0.0.1:{smtp_port}",
                        WORKER_POLL_INTERVAL="0.2", LOG_LEVEL="info", INTEGRATION_RETRY_BASE_SECONDS="1",
                        INTEGRATION_RETRY_CAP_SECONDS="1")
    with tempfile.TemporaryDirectory(prefix="privacy-") as tmp:
        logs = Path(tmp)
        # The sandbox plays the insurers and the partner: its own output is not the service's log.
        with process(["sandbox", "--port", str(sandbox_port)], env, logs / "sandbox.out", f"{sandbox}/_sandbox/health"):
            subprocess.run([sys.executable, "-m", "app", "sandbox", "configure", sandbox], env=env, cwd=ROOT,
                           check=True, stdout=subprocess.DEVNULL)
            with process(["serve", "--port", str(api_port)], env, logs / "api.log", f"{api}/healthz"), \
                    process(["worker"], env, logs / "worker.log"):
                yield Stack(env, api, sandbox, logs)


@pytest.fixture(scope="module")
def people(stack, admin) -> dict:
    """Two policies made through the gateway, sent to the insurer by the worker; Ada logs in by
    code; an operator searches for her and opens both items."""
    run = uuid.uuid4().hex[:10]
    ada, bob = f"ada.{run}@example.com", f"bob.{run}@example.com"
    ada_doc, bob_doc = f"X{run[:8].upper()}A", f"Y{run[:8].upper()}B"
    package = f"privacy-{run}"
    stack.cli("packages", "create", "--uid", package, "--name", "Privacy travel",
              "--variant", "travel:Travel Basic:12.50:EUR:MEDICAL=30000", "--sales-integration", "PROVIDER_A")
    hook = f"{stack.sandbox}/_sandbox/webhooks/privacy-{run}"
    channel = orjson.loads(stack.cli("channels", "create", "--name", f"Privacy partner {run}", "--branch", "v1",
                                     "--branch", "integrations/v2", "--package", package, "--integration-payload",
                                     orjson.dumps({"webhooks": [hook]}).decode()).stdout)
    httpx.put(hook, json={"secret": channel["webhookSecret"]}).raise_for_status()
    token = httpx.get(f"{stack.api}/api/gateway/v1/auth/authorize",
                      headers={"x-api-key": channel["apiKey"]}).json()["data"]["access_token"]
    gateway = {"Authorization": f"Bearer {token}"}

    def create(policy: str, subject: dict, beneficiaries: list[dict]) -> dict:
        resp = httpx.post(f"{stack.api}/api/gateway/v1/risk-items", headers=gateway, json={
            "package_uid": package, "policy_uid": policy, "variant": "travel",
            "insured_subject": subject, "beneficiaries": beneficiaries})
        assert resp.status_code == 201, resp.text
        return resp.json()["data"]

    held = create(f"ADA-{run}", {"name": "Ada Lovelace", "email": ada, "document": ada_doc, "phone": "+34600000001"},
                  [{"name": "Ada Lovelace", "email": ada, "document": ada_doc, "isHolder": True, "share": 100}])
    benefits = create(f"BOB-{run}", {"name": "Bob Babbage", "email": bob, "document": bob_doc},
                      [{"name": "Bob Babbage", "email": bob, "isHolder": True, "share": 50},
                       {"name": "Ada Lovelace", "email": ada, "document": ada_doc, "relationship": "friend",
                        "share": 50}])
    for item in (held, benefits):
        wait_for(lambda item=item: admin.execute(
            "SELECT e.status FROM insurance.integration_emissions e JOIN insurance.risk_items r ON r.id = e.risk_item_id "
            "WHERE r.uid = %s AND e.status = 'SUCCESS'", (item["uid"],)).fetchone(), 30, "the insurer's answer")
    wait_for(lambda: httpx.get(f"{stack.sandbox}/_sandbox/webhooks", params={"name": f"privacy-{run}"}).json()["total"]
             >= 2, 30, "the partner's webhooks")

    # Ada logs in with a code sent by e-mail.
    ps = f"{stack.api}/api/postsales/v1"
    assert httpx.post(f"{ps}/auth/otp/request", json={"email": ada}).status_code == 200
    mail = wait_for(lambda: httpx.get(f"{stack.sandbox}/_sandbox/mail", params={"to": ada}).json()["messages"],
                    10, "the code's mail")[-1]
    code = re.search(r"\b\d{6}\b", mail["text"]).group(0)
    holder = httpx.post(f"{ps}/auth/otp/verify", json={"email": ada, "otp": code}).json()["data"]["access_token"]
    mine = httpx.get(f"{ps}/me/risk-items", headers={"Authorization": f"Bearer {holder}"}).json()["data"]
    assert {i["uid"] for i in mine} == {held["uid"]}

    # An operator looks her up and opens both items.
    operator = f"dpo.{run}@example.com"
    stack.cli("users", "create", "--email", operator, stdin=PASSWORD)
    with httpx.Client(base_url=stack.api) as browser:
        assert browser.post("/api/auth/login", json={"email": operator, "password": PASSWORD}).status_code == 200
        found = browser.get("/backoffice/search", params={"q": ada})
        assert found.status_code == 200, stack.log_text()[-3000:]
        for item in (held, benefits):
            page = browser.get(f"/backoffice/risk-items/{item['id']}")
            assert page.status_code == 200
    return {"ada": ada, "bob": bob, "ada_doc": ada_doc, "bob_doc": bob_doc, "held": held, "benefits": benefits,
            "operator": operator, "mail": mail, "code": code}


def test_every_place_holding_a_person_is_on_the_map(people, admin):
    needles = [people["ada"], people["bob"], people["ada_doc"].lower(), people["bob_doc"].lower()]
    found = scan.places(admin, needles)
    assert ("insurance.beneficiaries", "email", "") in found  # the scan sees what the public paths stored
    assert ("insurance.postsales_otp", "email", "") in found
    assert scan.undeclared(admin, needles) == set()


def test_a_new_column_holding_an_email_without_a_declaration_fails_the_scan(people, admin):
    table = f"insurance.scan_probe_{uuid.uuid4().hex[:8]}"
    admin.execute(f"CREATE TABLE {table} (id int, note text, extra jsonb)")
    try:
        admin.execute(f"INSERT INTO {table} VALUES (1, %s, %s)",
                      (f"call {people['ada']} back", orjson.dumps({"contact": {"to": [people["ada"]]}}).decode()))
        assert scan.undeclared(admin, [people["ada"]]) == {(table, "note", ""), (table, "extra", "$.contact.to[*]")}
    finally:
        admin.execute(f"DROP TABLE {table}")


def test_the_code_is_in_the_mail_body_only(people):
    assert people["mail"]["subject"] == "Your access code"
    assert people["code"] in people["mail"]["text"]


def test_delivered_calls_keep_no_body_and_webhooks_carry_ids(people, admin):
    rows = admin.execute("SELECT url, body, delivered_at FROM outbox.http_requests WHERE url LIKE '%%/api/integrations/dispatch' "
                         "AND created_at > now() - interval '10 minutes' AND delivered_at IS NOT NULL").fetchall()
    assert rows and all(set(r["body"]) == {"type", "table", "record"} and set(r["body"]["record"]) == {"id", "uid"}
                        for r in rows)
    hooks = admin.execute("SELECT body FROM outbox.http_requests WHERE channel_id IS NOT NULL "
                          "AND body #>> '{data,riskItemUid}' IN (%s, %s)",
                          (people["held"]["uid"], people["benefits"]["uid"])).fetchall()
    assert len(hooks) >= 2 and all(set(h["body"]["data"]) <= {
        "emissionId", "riskItemId", "riskItemUid", "policyUid", "provider", "event", "status", "externalId",
        "attempts", "nextRetryAt", "error"} for h in hooks)


def test_export_gives_everything_about_the_person_and_is_audited(stack, people):
    out = orjson.loads(stack.cli("people", "export", people["ada"].upper(), "--actor", "ticket DPO-1").stdout)
    assert out["email"] == people["ada"]
    roles = {i["uid"]: i["roles"] for i in out["riskItems"]}
    assert roles == {people["held"]["uid"]: ["holder", "insured"], people["benefits"]["uid"]: ["beneficiary"]}
    assert {b["riskItemUid"] for b in out["beneficiaries"]} == set(roles)
    assert {(e["riskItemUid"], e["status"]) for e in out["emissions"]} >= {(u, "SUCCESS") for u in roles}
    assert out["loginCodes"] and out["loginCodes"][-1]["address"] == "127.0.0.1" and out["loginCodes"][-1]["usedAt"]
    # The partner's webhooks about her items' emissions are deliveries naming her items.
    assert {o["body"]["data"]["riskItemUid"] for o in out["outbox"] if o["body"] and o["body"].get("type", "")
            .startswith("emission.")} == set(roles)
    actions = {a["action"] for a in out["audit"]}
    assert {"people.search", "people.viewRiskItem", "people.export"} <= actions
    assert out["auditId"] in {a["id"] for a in out["audit"]}


def test_erasure_deletes_history_keeps_contracts_with_their_reason_and_is_idempotent(stack, people, admin):
    refused = stack.cli("people", "erase", people["ada"], stdin="no\n", check=False)
    assert refused.returncode == 1 and "nothing erased" in refused.stderr
    assert admin.execute("SELECT count(*) AS n FROM insurance.postsales_otp WHERE email = %s",
                         (people["ada"],)).fetchone()["n"] >= 1
    first = orjson.loads(stack.cli("people", "erase", people["ada"], stdin="yes\n").stdout)
    assert first["erased"]["loginCodes"] >= 1
    assert {k["riskItemUid"] for k in first["kept"]} == {people["held"]["uid"], people["benefits"]["uid"]}
    assert all(k["until"] is None and "active policy" in k["why"] for k in first["kept"])
    assert first["pseudonymized"] == []
    assert admin.execute("SELECT count(*) AS n FROM insurance.postsales_otp WHERE email = %s",
                         (people["ada"],)).fetchone()["n"] == 0
    again = orjson.loads(stack.cli("people", "erase", people["ada"], "--yes").stdout)
    assert again["erased"] == {k: 0 for k in first["erased"]} and again["kept"] == first["kept"]

    # Bob's policy ends; once its retention is over, the hourly pass pseudonymizes it: Ada is
    # no longer named there, and her answer says so.
    admin.execute("UPDATE insurance.risk_items SET status = 'expired' WHERE uid = %s", (people["benefits"]["uid"],))
    ended = admin.execute("SELECT ended_at FROM insurance.risk_items WHERE uid = %s",
                          (people["benefits"]["uid"],)).fetchone()["ended_at"]
    assert ended is not None
    until = orjson.loads(stack.cli("people", "erase", people["ada"], "--yes").stdout)
    [kept] = [k for k in until["kept"] if k["riskItemUid"] == people["benefits"]["uid"]]
    assert kept["status"] == "expired" and kept["until"].startswith(str(ended.year + 10))
    admin.execute("UPDATE insurance.risk_items SET ended_at = now() - interval '10 years 1 day' WHERE uid = %s",
                  (people["benefits"]["uid"],))
    assert admin.execute("SELECT insurance.purge_expired() ->> 'pseudonymized' AS n").fetchone()["n"] != "0"
    names = admin.execute("SELECT b.name, b.email, b.document FROM insurance.beneficiaries b "
                          "JOIN insurance.risk_items r ON r.id = b.risk_item_id WHERE r.uid = %s",
                          (people["benefits"]["uid"],)).fetchall()
    assert {n["name"] for n in names} == {"erased"} and all(n["email"].endswith("@erased.invalid") for n in names)
    assert scan.places(admin, [people["bob"], people["bob_doc"].lower()]) == set() or \
        all(p[0] == "insurance.audit_log" or p[0] == "outbox.http_requests" for p in
            scan.places(admin, [people["bob"], people["bob_doc"].lower()]))
    after = orjson.loads(stack.cli("people", "export", people["ada"]).stdout)
    assert {i["uid"] for i in after["riskItems"]} == {people["held"]["uid"]}


def test_audit_about_lists_who_looked_exported_and_erased(stack, people):
    rows = orjson.loads(stack.cli("audit", "--about", people["ada"]).stdout)
    seen = {(r["action"], r["actor"]) for r in rows}
    assert ("people.viewRiskItem", f"dashboard:{people['operator']}") in seen
    assert ("people.search", f"dashboard:{people['operator']}") in seen
    assert {"people.export", "people.erase"} <= {r["action"] for r in rows}
    assert any(r["onBehalfOf"] == "ticket DPO-1" for r in rows if r["action"] == "people.export")


def test_the_back_office_privacy_page_exports_and_erases_after_a_confirmation(stack, people, admin):
    with httpx.Client(base_url=stack.api) as browser:
        assert browser.post("/api/auth/login", json={"email": people["operator"], "password": PASSWORD}).status_code == 200
        page = browser.get("/backoffice/privacy", params={"email": people["ada"]})
        assert page.status_code == 200 and "people.viewRiskItem" in page.text  # the operator's views of her items
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        export = browser.post("/backoffice/privacy/export", data={"csrf": csrf, "email": people["ada"]})
        assert export.status_code == 200 and "attachment" in export.headers["content-disposition"]
        assert people["held"]["uid"] in {i["uid"] for i in export.json()["riskItems"]}
        assert browser.post("/backoffice/privacy/export", data={"csrf": "forged", "email": people["ada"]}).status_code == 403
        confirm = browser.get("/backoffice/privacy/erase", params={"email": people["ada"]})
        assert confirm.status_code == 200 and f"Erase the data of {people['ada']}?" in confirm.text
        assert browser.post("/backoffice/privacy/erase", data={"csrf": csrf, "email": people["ada"]}).status_code == 400
        done = browser.post("/backoffice/privacy/erase", data={"csrf": csrf, "email": people["ada"], "confirm": "yes"})
        assert done.status_code == 200 and "Erased for" in done.text
    rows = admin.execute("SELECT action, actor, via FROM insurance.audit_log WHERE targets @> %s::jsonb "
                         "AND action IN ('people.export', 'people.erase') AND via = 'backoffice'",
                         (orjson.dumps([people["ada"]]).decode(),)).fetchall()
    assert {(r["action"], r["actor"], r["via"]) for r in rows} == {
        ("people.export", f"dashboard:{people['operator']}", "backoffice"),
        ("people.erase", f"dashboard:{people['operator']}", "backoffice")}


def test_the_logs_of_the_api_and_the_worker_name_nobody(stack, people):
    raw = (stack.logs / "api.log").read_text(errors="replace") + (stack.logs / "worker.log").read_text(errors="replace")
    text = unquote(raw)  # an address in a URL is still an address (%40)
    assert text.count("\n") > 5, "the stack logged nothing: the scan would prove nothing"
    lower = text.lower()
    for needle in (people["ada"], people["bob"], people["operator"], "ada lovelace", "bob babbage",
                   people["ada_doc"].lower(), people["bob_doc"].lower()):
        assert needle not in lower, f"{needle} in the logs:\n" + "\n".join(
            line for line in text.splitlines() if needle in line.lower())[:2000]
    assert not re.search(r"[\w.+-]+@[\w-]+\.[\w.]+", text), re.findall(r".{60}[\w.+-]+@[\w-]+\.[\w.]+.{20}", text)[:5]
