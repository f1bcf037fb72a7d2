"""The command line, run as a user would: `python -m app ...` in a child process."""
from __future__ import annotations

import getpass
import hashlib
import subprocess
import sys

import orjson
import pytest

from tests.conftest import ROOT, child_environ, unique


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, env=child_environ(),
                          capture_output=True, text=True, input=stdin, timeout=60)


TRAVEL = "travel:Travel Basic:12.50:EUR:MEDICAL=30000,LUGGAGE=1500"


def last_audit(admin, action: str) -> dict:
    return admin.execute("SELECT actor, action, targets, result FROM insurance.audit_log WHERE action = %s "
                         "ORDER BY id DESC LIMIT 1", (action,)).fetchone()


def test_packages_create_then_duplicate_is_refused(admin):
    uid = unique("pkg")
    done = cli("packages", "create", "--uid", uid, "--name", "Travel", "--variant", TRAVEL,
               "--variant", "home:Home:99:EUR:FIRE=100000", "--sales-integration", "provider_a")
    assert done.returncode == 0, done.stderr
    package = orjson.loads(done.stdout)
    assert package["sales_integration_slug"] == "PROVIDER_A"
    assert [v["code"] for v in package["variants"]] == ["home", "travel"]
    rows = admin.execute("SELECT code, name, premium, currency, coverages FROM insurance.package_variants "
                         "WHERE package_id = %s ORDER BY code", (package["id"],)).fetchall()
    assert [(r["code"], r["name"], str(r["premium"]), r["currency"]) for r in rows] == [
        ("home", "Home", "99.00", "EUR"), ("travel", "Travel Basic", "12.50", "EUR")]
    assert rows[1]["coverages"] == [{"code": "MEDICAL", "limit": 30000.0}, {"code": "LUGGAGE", "limit": 1500.0}]
    assert last_audit(admin, "packages.create") == {
        "actor": f"cli:{getpass.getuser()}", "action": "packages.create", "targets": [uid], "result": "ok"}
    again = cli("packages", "create", "--uid", uid, "--name", "Travel", "--variant", TRAVEL)
    assert again.returncode == 1
    assert again.stderr.strip().endswith("exists already") and len(again.stderr.strip().splitlines()) == 1
    assert last_audit(admin, "packages.create")["result"] == "PACKAGE_EXISTS"


@pytest.mark.parametrize("args, says", [
    (["--variant", "boat:Boat:1:EUR:HULL=1"], "variant code 'boat'"),
    ([], "--variant"),                                                        # a package needs a variant
    (["--variant", "travel"], "is not CODE:NAME:PREMIUM"),                    # name, premium... from the command line
    (["--variant", "travel:T:-1:EUR:MEDICAL=1"], "premium"),
    (["--variant", "travel:T:1:eur:MEDICAL=1"], "currency"),
    (["--variant", "travel:T:1:EUR:"], "coverages"),
    (["--variant", TRAVEL, "--sales-integration", "PROVIDR_A"], "'PROVIDR_A' is not a provider"),
    (["--variant", TRAVEL, "--post-sales-integration", "PROVIDER_Z"], "'PROVIDER_Z' is not a provider"),
    (["--variant", TRAVEL, "--variant", TRAVEL], "once"),
])
def test_packages_that_could_only_fail_later_are_refused(admin, args, says):
    uid = unique("pkg")
    done = cli("packages", "create", "--uid", uid, "--name", "Travel", *args)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert admin.execute("SELECT count(*) AS n FROM insurance.packages WHERE uid = %s", (uid,)).fetchone()["n"] == 0


def test_abbreviated_flags_are_refused(admin):
    name = unique("foo")
    done = cli("channels", "create", "--nam", name)
    assert done.returncode == 2 and "--nam" in done.stderr
    assert admin.execute("SELECT count(*) AS n FROM insurance.channels WHERE name = %s", (name,)).fetchone()["n"] == 0
    assert cli("packages", "create", "--ui", "x", "--name", "y", "--variant", TRAVEL).returncode == 2
    assert cli("integrations", "set", "PROVIDER_A", "--auth", "{}").returncode == 2


def test_bad_arguments_exit_2_with_one_line():
    done = cli("packages", "create", "--uid", "x", "--name", "y", "--variant", "boat")
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert cli("channels", "revoke", "--id", "not-a-uuid").returncode == 2
    assert cli("orders", "create", "--risk-item", "not-an-item").returncode == 2


def test_orders_create_records_a_policy_created_order(admin, make_risk_item):
    item = make_risk_item()
    done = cli("orders", "create", "--risk-item", str(item["uid"]), "--actor", "ops")
    assert done.returncode == 0, done.stderr
    order = orjson.loads(done.stdout)
    assert order["event"] == "POLICY_CREATED" and order["riskItemId"] == item["id"]
    assert order["riskItemUid"] == str(item["uid"])
    row = admin.execute("SELECT risk_item_id, event FROM insurance.orders WHERE id = %s", (order["orderId"],)).fetchone()
    assert row == {"risk_item_id": item["id"], "event": "POLICY_CREATED"}
    queued = admin.execute("SELECT count(*) AS n FROM outbox.http_requests WHERE url = '/api/integrations/dispatch-v2' "
                           "AND body ->> 'order_id' = %s", (str(order["orderId"]),)).fetchone()["n"]
    assert queued == 1, "the order trigger queues the welcome mail's dispatch"
    assert last_audit(admin, "orders.create") == {"actor": f"cli:{getpass.getuser()}", "action": "orders.create",
                                                  "targets": [str(item["uid"])], "result": "ok"}
    by_id = cli("orders", "create", "--risk-item", str(item["id"]))
    assert by_id.returncode == 0 and orjson.loads(by_id.stdout)["riskItemUid"] == str(item["uid"])
    missing = cli("orders", "create", "--risk-item", str(2**62))
    assert missing.returncode == 1 and "no such risk item" in missing.stderr


def test_channel_key_is_printed_once_and_stored_as_hash(admin):
    done = cli("channels", "create", "--name", unique("acme"), "--branch", "v1", "--branch", "ia/v1")
    assert done.returncode == 0, done.stderr
    channel = orjson.loads(done.stdout)
    assert channel["apiKey"].startswith("ik_")
    row = admin.execute("SELECT api_key_hash, branches FROM insurance.channels WHERE id = %s",
                        (channel["id"],)).fetchone()
    assert bytes(row["api_key_hash"]) == hashlib.sha256(channel["apiKey"].encode()).digest()
    assert row["branches"] == ["v1", "ia/v1"]
    listed = cli("channels", "list")
    assert channel["id"] in listed.stdout and channel["apiKey"] not in listed.stdout
    revoked = cli("channels", "revoke", "--id", channel["id"])
    assert revoked.returncode == 0 and orjson.loads(revoked.stdout)["active"] is False
    assert last_audit(admin, "channels.revoke")["targets"] == [channel["id"]]
    assert last_audit(admin, "channels.create")["targets"] == [channel["id"]]
    rotated = cli("channels", "rotate", "--id", channel["id"])
    assert rotated.returncode == 1 and "is revoked" in rotated.stderr
    assert last_audit(admin, "channels.rotate")["result"] == "CHANNEL_REVOKED"


def test_migrate_applies_outbox_retention(admin):
    """OUTBOX_RETENTION reaches the retention job as the database setting it reads."""
    def setting() -> str | None:
        row = admin.execute(
            """SELECT s.setting FROM pg_db_role_setting d, unnest(d.setconfig) AS s(setting), pg_database db
                WHERE d.setdatabase = db.oid AND db.datname = current_database() AND d.setrole = 0
                  AND s.setting LIKE 'insurance.outbox_retention=%'""").fetchone()
        return row and row["setting"]

    env = child_environ(OUTBOX_RETENTION="3d")
    done = subprocess.run([sys.executable, "-m", "app", "migrate"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    try:
        assert done.returncode == 0, done.stderr
        assert setting() == "insurance.outbox_retention=3 days"
    finally:
        admin.execute("SELECT insurance.set_outbox_retention('7 days')")


def test_the_integration_flags_name_the_slugs_they_take():
    """Issue 21: `--sales-integration`'s help did not say which slugs exist."""
    from app.orchestrator.registry import ADAPTERS

    out = " ".join(cli("packages", "create", "--help").stdout.split())
    for flag in ("--sales-integration SLUG the provider", "--post-sales-integration SLUG the provider"):
        assert flag in out, out
    for slug in ADAPTERS:
        assert out.count(slug) >= 2, (slug, out)
    assert "Post-sales Integration" in out


def test_the_audit_row_keeps_the_os_user_and_beside_it_the_actor_given(admin, make_risk_item):
    """Issues 19 and 21: `--actor` replaced the OS user, so anyone could write any name; the
    row now keeps who ran the command, on whose behalf, and that it came from the command line."""
    item = make_risk_item()
    assert cli("orders", "create", "--risk-item", str(item["id"]), "--actor", "dashboard:ceo@example.com").returncode == 0
    row = admin.execute("SELECT actor, on_behalf_of, via FROM insurance.audit_log WHERE action = 'orders.create' "
                        "ORDER BY id DESC LIMIT 1").fetchone()
    assert row == {"actor": f"cli:{getpass.getuser()}", "on_behalf_of": "dashboard:ceo@example.com", "via": "cli"}
    assert cli("orders", "create", "--risk-item", str(item["id"])).returncode == 0
    row = admin.execute("SELECT on_behalf_of, via FROM insurance.audit_log WHERE action = 'orders.create' "
                        "ORDER BY id DESC LIMIT 1").fetchone()
    assert row == {"on_behalf_of": None, "via": "cli"}


def test_a_refused_channel_leaves_its_refusal_in_the_audit_log(admin):
    """Issue 21: `channels create --package unknown` rolled its refusal back with the channel."""
    name = unique("refused")
    done = cli("channels", "create", "--name", name, "--package", "no-such-package")
    assert done.returncode == 1
    row = last_audit(admin, "channels.create")
    assert row["result"] == "UNKNOWN_PACKAGE" and name in str(row["targets"]), row


def test_an_outbox_retry_that_exits_1_is_not_recorded_ok(admin):
    """Issue 21: `outbox retry 99999` exited 1 and its audit row said "ok"."""
    done = cli("outbox", "retry", str(2**62))
    assert done.returncode == 1
    assert last_audit(admin, "outbox.retry")["result"] == "OUTBOX_ROW_NOT_FOUND"


def test_every_command_line_audit_row_says_via_cli(admin):
    """Issue 30: `channels create` (and the webhook secret set with it) wrote via NULL, which the
    back-office's audit page showed as "—" where every other command says cli."""
    since = admin.execute("SELECT coalesce(max(id), 0) AS id FROM insurance.audit_log").fetchone()["id"]
    payload = orjson.dumps({"webhooks": [{"url": "http://127.0.0.1:9/hook", "events": ["emission.succeeded"]}]})
    # Webhooks need an integrations/* branch (issue 29), where the partner lists its deliveries.
    made = cli("channels", "create", "--name", unique("via"), "--branch", "integrations/v2",
               "--integration-payload", payload.decode())
    assert made.returncode == 0, made.stderr
    channel = orjson.loads(made.stdout)
    assert channel.get("webhookSecret"), "a channel with webhooks gets its secret in the same call"
    for args in (("channels", "branches", "--id", channel["id"], "--branch", "v2", "--branch", "integrations/v2"),
                 ("channels", "revoke", "--id", channel["id"]),
                 ("channels", "create", "--name", unique("refused"), "--package", "no-such-package")):
        cli(*args)
    rows = admin.execute("SELECT action, result, via FROM insurance.audit_log WHERE id > %s AND actor LIKE 'cli:%%' "
                         "ORDER BY id", (since,)).fetchall()
    assert {r["action"] for r in rows} >= {"channels.create", "channels.webhook_secret", "channels.set_branches",
                                           "channels.revoke"}, rows
    assert [r for r in rows if r["via"] != "cli"] == []


def test_only_app_cli_calls_the_admin_functions():
    """A command that called app.db.call_admin itself skipped the audit settings (via, --actor):
    every command goes through app.cli (admin, or call on its admin_connection)."""
    callers = [str(p.relative_to(ROOT)) for p in (ROOT / "app").rglob("*.py")
               if "call_admin(" in p.read_text() and p.name not in ("cli.py", "db.py")]
    assert callers == []


SYSTEM_PYTHON = "/usr/bin/python3"


def _system_python_lacks_the_libraries() -> bool:
    import os
    if not os.path.exists(SYSTEM_PYTHON):
        return False
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import orjson, falcon"], capture_output=True)
    return probe.returncode != 0


@pytest.mark.skipif(not _system_python_lacks_the_libraries(),
                    reason="no system python3 without the project's libraries on this machine")
@pytest.mark.parametrize("args", [["--help"], ["migrate"], ["users", "list"]])
def test_the_system_python_points_to_the_environment_in_one_line(args):
    """Issue 42: `python3 -m app` outside .venv printed a ModuleNotFoundError traceback."""
    done = subprocess.run([SYSTEM_PYTHON, "-m", "app", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"})
    assert done.returncode == 1 and done.stdout == ""
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f".venv/bin/python -m app {' '.join(args)}" in done.stderr, done.stderr

