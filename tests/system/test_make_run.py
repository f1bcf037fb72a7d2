"""`make run` as a newcomer runs it: it sets up, migrates and serves, and Ctrl-C stops it."""
from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import httpx

from app.config import SECRET_NAMES
from tests.conftest import child_environ, free_port, running, start_make_run, stop_make_run, unique, wait_http


def test_make_run_serves_health_and_readiness_then_stops_on_ctrl_c():
    port = free_port()
    env = child_environ(PORT=str(port))
    proc = start_make_run(env)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", timeout=60, process=proc)
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
        ready = httpx.get(f"http://127.0.0.1:{port}/readyz")
        assert ready.status_code == 200, ready.text
    finally:
        output, stopped = stop_make_run(proc)
    assert stopped, "make run did not stop on Ctrl-C:\n" + output
    assert f"127.0.0.1:{port}" in output  # it says where it listens


def _descendants(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(FileNotFoundError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found + [g for c in found for g in _descendants(c)]


def _cmdline(pid: int) -> str:
    with contextlib.suppress(FileNotFoundError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return ""


def test_a_second_worker_beside_make_run_delivers_with_the_shared_secret(tmp_path, admin, make_package):
    """Development as a newcomer runs it: no secret in the environment. make run writes its
    secrets once into the development env file; a worker started by hand reads the same file,
    so the API accepts its service-role bearer. make run's own worker is paused meanwhile, so
    that only the hand-started one can deliver."""
    port, sandbox_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if k not in SECRET_NAMES and k != "APP_ENV"}
    env.update(PORT=str(port), SANDBOX_PORT=str(sandbox_port), SANDBOX_SMTP_PORT=str(free_port()),
               DEV_ENV_FILE=str(tmp_path / ".env.development"), LOG_LEVEL="warning")
    run = start_make_run(env)
    paused = None
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", timeout=60, process=run)
        deadline = time.monotonic() + 30
        while paused is None and time.monotonic() < deadline:
            paused = next((p for p in _descendants(run.pid) if " -m app worker" in _cmdline(p)), None)
            time.sleep(0.1)
        assert paused, "make run started no worker"
        os.kill(paused, signal.SIGSTOP)
        with running(["worker"], {**env, "APP_ENV": "development"}):  # a server never guesses its mode
            package = make_package(sales="PROVIDER_A")
            with admin.transaction():
                item = admin.execute(
                    """INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject)
                       VALUES (%s, %s, 'travel', '{"name": "Ada Lovelace", "email": "ada@example.com"}') RETURNING id""",
                    (package["id"], unique("pol"))).fetchone()
                admin.execute("""INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
                                 VALUES (%s, 'Ada Lovelace', 'ada@example.com', true, 100)""", (item["id"],))
            status = None
            deadline = time.monotonic() + 30
            while status != "SUCCESS" and time.monotonic() < deadline:
                row = admin.execute("SELECT status FROM insurance.integration_emissions WHERE risk_item_id = %s",
                                    (item["id"],)).fetchone()
                status = row and row["status"]
                time.sleep(0.2)
            assert status == "SUCCESS", "the hand-started worker's deliveries were refused"
        assert (tmp_path / ".env.development").stat().st_mode & 0o777 == 0o600
    finally:
        if paused:
            os.kill(paused, signal.SIGCONT)
        stop_make_run(run)
