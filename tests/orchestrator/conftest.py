"""Fixtures of the orchestrator tests: a database pool, a fresh orchestrator, sandbox controls."""
from __future__ import annotations

import dataclasses
import os
import uuid
from typing import Any, Iterator

import httpx
import orjson
import pytest

from app.db import Database
from app.orchestrator.registry import ADAPTERS
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
