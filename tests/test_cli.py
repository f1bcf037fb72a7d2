"""The command line, run as a user would: `python -m app ...` in a child process."""
from __future__ import annotations

import hashlib
import subprocess
import sys

import orjson

from tests.conftest import ROOT, child_environ, unique


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, env=child_environ(),
                          capture_output=True, text=True, input=stdin, timeout=60)


def test_packages_create_then_duplicate_is_refused(admin):
    uid = unique("pkg")
    done = cli("packages", "create", "--uid", uid, "--name", "Travel", "--variant", "travel",
               "--variant", "home", "--sales-integration", "provider_a")
    assert done.returncode == 0, done.stderr
    package = orjson.loads(done.stdout)
    assert package["sales_integration_slug"] == "PROVIDER_A"
    assert package["variants"] == ["travel", "home"]
    codes = admin.execute("SELECT code FROM insurance.package_variants WHERE package_id = %s ORDER BY code",
                          (package["id"],)).fetchall()
    assert [r["code"] for r in codes] == ["home", "travel"]
    again = cli("packages", "create", "--uid", uid, "--name", "Travel")
    assert again.returncode == 1
    assert again.stderr.strip().endswith("exists already") and len(again.stderr.strip().splitlines()) == 1


def test_bad_arguments_exit_2_with_one_line():
    done = cli("packages", "create", "--uid", "x", "--name", "y", "--variant", "boat")
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert cli("channels", "revoke", "--id", "not-a-uuid").returncode == 2


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
