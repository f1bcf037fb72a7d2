"""Fixtures of the orchestrator tests: a database pool, a fresh orchestrator, sandbox controls."""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from app.db import Database
from app.orchestrator.registry import ADAPTERS
from app.orchestrator.service import Orchestrator
from tests import throwaway
from tests.conftest import ROOT, child_environ


def point_providers_at(admin, sandbox_url: str) -> None:
    """Every described insurer's integrations row pointed at the sandbox served at `sandbox_url`."""
    from app.sandbox.credentials import auth_configs
    throwaway.require(admin, "point every insurer at the sandbox of the tests")
    for slug, auth_config in auth_configs(sandbox_url).items():
        admin.execute("SELECT integrations.set_provider_config(%s, %s)", (slug, orjson.dumps(auth_config).decode()))


def copy_repo(target: Path) -> Path:
    """The code, the tests and the migrations copied to `target` (a tree to change without touching this one)."""
    ignore = shutil.ignore_patterns("__pycache__", "node_modules", "pgtap")
    for part in ("app", "tests", "sql"):
        shutil.copytree(ROOT / part, target / part, ignore=ignore)
    for name in ("pyproject.toml", "sqitch.conf", "sqitch.plan"):  # `python -m app migrate` deploys from a copy too
        shutil.copy(ROOT / name, target / name)
    return target


def run_in(copy: Path, admin, sandbox: str, *args: str) -> subprocess.CompletedProcess:
    """`python -m ARGS` in a copy of the repo (a child pytest, the command line); afterwards
    the insurers point at this session's sandbox again (a child's own sandbox is gone)."""
    try:
        return subprocess.run([sys.executable, "-m", *args], cwd=copy, env=child_environ(), capture_output=True,
                              text=True, timeout=600)
    finally:
        point_providers_at(admin, sandbox)


@pytest.fixture(scope="module")
def pointed(admin, sandbox):
    """Every described insurer pointed at the session's sandbox (another suite's stack may have
    pointed them elsewhere)."""
    point_providers_at(admin, sandbox)


@pytest.fixture(scope="session")
async def db():
    throwaway.ensure()
    database = Database(os.environ["DATABASE_URL"], 1, 4)
    await database.open()
    yield database
    await database.close()


@pytest.fixture(scope="session")
def fast_config(config):
    """Short timeouts, so that a provider that hangs fails the test in about a second."""
    return dataclasses.replace(config, http_connect_timeout=1.0, http_read_timeout=1.0)


@pytest.fixture
async def orchestrator(fast_config, db, sandbox):
    """A fresh orchestrator: no cached configuration, no cached token."""
    orch = Orchestrator(fast_config, db)
    yield orch
    await orch.close()


class SandboxControl:
    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(base_url=url, timeout=5)

    def fault(self, **fault: Any) -> None:
        response = self.http.post("/_sandbox/faults", json=fault)
        assert response.status_code == 201, response.text

    def requests(self, provider: str, key: str | None = None) -> list[dict]:
        rows = self.http.get("/_sandbox/requests", params={"provider": provider}).json()["requests"]
        return [r for r in rows if key is None or r["idempotencyKey"] == key]

    def stats(self) -> dict:
        return self.http.get("/_sandbox/stats").json()


@pytest.fixture
def sbx(sandbox) -> Iterator[SandboxControl]:
    control = SandboxControl(sandbox)
    yield control
    control.http.delete("/_sandbox/faults")
    control.http.close()


@pytest.fixture
async def configured(admin, fast_config, db):
    """An orchestrator whose only adapter (a copy of PROVIDER_A's, B's or the mail one) runs under
    a fresh slug with the given auth_config (None: no integrations row). Tests of bad
    configurations use it, so that the shared providers' rows, which other processes of the
    suite may be reading, never change."""
    made: list[tuple[Orchestrator, str]] = []

    async def make(adapter: str, auth_config: dict | None) -> tuple[Orchestrator, str]:
        slug = f"TEST_{uuid.uuid4().hex[:12].upper()}"
        base = ADAPTERS[adapter]
        if auth_config is not None:
            admin.execute("SELECT integrations.set_provider_config(%s, %s)",
                          (slug, orjson.dumps(auth_config).decode()))
        orch = Orchestrator(fast_config, db, adapters={slug: type(base.__name__, (base,), {"slug": slug})})
        made.append((orch, slug))
        return orch, slug

    yield make
    for orch, slug in made:
        await orch.close()
        admin.execute("DELETE FROM insurance.integrations WHERE slug = %s", (slug,))
