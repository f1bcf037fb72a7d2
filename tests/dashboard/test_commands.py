"""`python -m app users ...`, run as an operator would."""
from __future__ import annotations

import json
import subprocess
import sys

import argon2

from tests.conftest import ROOT, child_environ, unique
from tests.dashboard.conftest import login


def cli(*args: str, stdin: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, env=child_environ(),
                          capture_output=True, text=True, input=stdin, timeout=60)


async def test_users_create_reads_the_password_from_stdin(client, admin):
    email = f"{unique('cli')}@insurance.invalid"
    done = cli("users", "create", "--email", email.upper(), stdin="a long enough password\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["email"] == email
    stored = admin.execute("SELECT password_hash FROM insurance.dashboard_users WHERE email = %s", (email,)).fetchone()
    assert argon2.PasswordHasher().verify(stored["password_hash"], "a long enough password")
    assert (await login(client, email, "a long enough password")).status_code == 200
    again = cli("users", "create", "--email", email, stdin="a long enough password\n")
    assert again.returncode == 1 and again.stderr.strip().endswith("exists already")
    short = cli("users", "create", "--email", f"{unique('cli')}@insurance.invalid", stdin="short\n")
    assert short.returncode == 2 and len(short.stderr.strip().splitlines()) == 1
    audit = admin.execute("SELECT actor, targets, result FROM insurance.audit_log WHERE action = 'users.create' "
                          "ORDER BY id DESC LIMIT 2").fetchall()
    assert [(a["targets"], a["result"]) for a in audit] == [([email], "USER_EXISTS"), ([email], "ok")]
    listed = cli("users", "list", stdin="")
    assert email in listed.stdout and "argon2" not in listed.stdout
