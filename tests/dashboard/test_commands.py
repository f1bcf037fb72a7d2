"""`python -m app users ...`, run as an operator would."""
from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time

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


def at_a_terminal(*args: str, keys: list[bytes], timeout: float = 60) -> tuple[int, str]:
    """`python -m app ARGS` in a real pseudo-terminal (its controlling terminal, as a shell's),
    typing keys[i] once the (i+1)-th password prompt shows; (exit code, what the terminal showed)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: its terminal is the pty
        os.chdir(ROOT)
        os.execvpe(sys.executable, [sys.executable, "-m", "app", *args], child_environ())
    shown, typed, deadline = b"", 0, time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if typed < len(keys) and shown.count(b"assword: ") > typed:
                os.write(fd, keys[typed])
                typed += 1
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:  # EIO: the child has gone and the terminal is closed
                    break
                if not chunk:
                    break
                shown += chunk
        else:
            os.kill(pid, 9)
            raise AssertionError(f"no end within {timeout}s; the terminal showed {shown!r}")
    finally:
        os.close(fd)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), shown.decode(errors="replace")


def created(admin, email: str) -> bool:
    return admin.execute("SELECT 1 FROM insurance.dashboard_users WHERE email = %s", (email,)).fetchone() is not None


def test_users_create_at_a_terminal_asks_twice_and_refuses_two_different_passwords(admin):
    email = f"{unique('tty')}@insurance.invalid"
    code, shown = at_a_terminal("users", "create", "--email", email,
                                keys=[b"a long enough password\n", b"a long enough passwort\n"])
    assert code == 2 and "the two passwords differ" in shown, shown
    assert "Repeat the password" in shown and "a long enough" not in shown, "asked twice, never echoed"
    assert not created(admin, email)
    code, shown = at_a_terminal("users", "create", "--email", email,
                                keys=[b"a long enough password\n", b"a long enough password\n"])
    assert code == 0 and json.loads(shown[shown.index("{"):])["email"] == email, shown
    assert created(admin, email)


def test_ctrl_d_at_the_password_prompt_ends_cleanly(admin):
    email = f"{unique('tty')}@insurance.invalid"
    code, shown = at_a_terminal("users", "create", "--email", email, keys=[b"\x04"])
    assert code == 1 and "cancelled" in shown and "Traceback" not in shown, shown
    code, shown = at_a_terminal("users", "create", "--email", email, keys=[b"a long enough password\n", b"\x04"])
    assert code == 1 and "cancelled" in shown and "Traceback" not in shown, shown
    assert not created(admin, email)
    empty = cli("users", "create", "--email", email, stdin="")  # a pipe that ends at once
    assert empty.returncode == 2 and "no password" in empty.stderr and "Traceback" not in empty.stderr
    assert not created(admin, email)
