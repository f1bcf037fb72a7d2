"""What each process loads before it serves anything (docs/benchmarks.md "Memory"): the API and the
worker stay within their resident budgets only while the heavy libraries wait for the first
request that needs them. Each check starts a fresh interpreter, as a deployment does."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

# Loaded at the first request that needs them, never at start.
LATE = {
    "pydantic": "the dashboard's RPC inputs (app/dashboard/router.py)",
    "argon2": "the dashboard login",
    "jinja2": "the back-office pages and the mail templates",
    "aiohttp": "a provider call (app/orchestrator/transport.py)",
    "psycopg": "the command line only",
}
# Never loaded by the worker, which serves no HTTP (its metrics use prometheus-client's server).
HTTP_SERVER = {"falcon": "the API's framework", "uvicorn": "the API's server"}


def loaded_at_start(module: str, env_file: Path) -> set[str]:
    code = (f"import sys, json; import {module}; "
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    # Development: the process settles its secrets in a file of its own, as `make run` does.
    env = {**os.environ, "APP_ENV": "development", "LOG_LEVEL": "warning",
           "DEV_ENV_FILE": str(env_file)}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True).stdout
    return set(json.loads(out.splitlines()[-1]))


# The worker (`python -m app worker` imports app/outbox/commands.py) opens its aiohttp sessions
# before its first claim: aiohttp is its one HTTP client, never a late one.
WORKER_LATE = {name: why for name, why in LATE.items() if name != "aiohttp"}


@pytest.mark.parametrize("module,not_yet", [("app.asgi", LATE), ("app.outbox.commands", {**WORKER_LATE, **HTTP_SERVER})])
def test_a_process_starts_without_the_libraries_of_its_first_requests(module, not_yet, tmp_path):
    loaded = loaded_at_start(module, tmp_path / ".env.development")
    early = {name: why for name, why in not_yet.items() if name in loaded}
    assert early == {}
