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
