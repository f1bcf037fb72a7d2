"""Fixtures of the orchestrator tests: a database pool, a fresh orchestrator, sandbox controls."""
from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import Any, Iterator

import httpx
import orjson
import pytest

from app.db import Database
from app.orchestrator.service import Orchestrator


@pytest.fixture(scope="session")
async def db():
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
    await orch.start()
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
def provider_config(admin, sandbox):
    """Temporarily replaces a provider's auth_config; the sandbox's is put back afterwards."""
    from app.sandbox.credentials import auth_configs

    @contextlib.contextmanager
    def use(slug: str, auth_config: dict) -> Iterator[None]:
        admin.execute("SELECT integrations.set_provider_config(%s, %s)", (slug, orjson.dumps(auth_config).decode()))
        try:
            yield
        finally:
            admin.execute("SELECT integrations.set_provider_config(%s, %s)",
                          (slug, orjson.dumps(auth_configs(sandbox)[slug]).decode()))
    return use
