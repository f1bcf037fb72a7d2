"""`make run` as a newcomer runs it: it sets up, migrates and serves, and Ctrl-C stops it."""
from __future__ import annotations

import os
import signal
import subprocess

import httpx

from tests.conftest import ROOT, child_environ, free_port, wait_http


def test_make_run_serves_health_and_readiness_then_stops_on_ctrl_c():
    port = free_port()
    env = child_environ(PORT=str(port))
    proc = subprocess.Popen(["make", "run"], cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", timeout=60, process=proc)
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
        ready = httpx.get(f"http://127.0.0.1:{port}/readyz")
        assert ready.status_code == 200, ready.text
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal sends
        try:
            output, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
            raise AssertionError("make run did not stop on Ctrl-C:\n" + output)
    assert f"127.0.0.1:{port}" in output  # it says where it listens
