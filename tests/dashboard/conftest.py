"""Fixtures of the dashboard surface: users, logged-in sessions, emissions, the real tRPC client."""
from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import argon2
import orjson
import pytest

from tests.conftest import unique

CLIENT_DIR = Path(__file__).resolve().parent / "client"
# Cheap parameters for test users only: the hash is still a real argon2 hash.
_hasher = argon2.PasswordHasher(time_cost=1, memory_cost=8192, parallelism=1)
PASSWORD = "correct horse battery staple"


@pytest.fixture
def make_user(admin):
    def make(password: str = PASSWORD, active: bool = True) -> dict:
        email = f"{unique('ops')}@insurance.invalid"
        row = admin.execute(
            """INSERT INTO insurance.dashboard_users (email, password_hash, active) VALUES (%s, %s, %s)
               RETURNING id, email""", (email, _hasher.hash(password), active)).fetchone()
        return {**row, "password": password}
    return make


async def login(client, email: str, password: str = PASSWORD, **kwargs):
    return await client.simulate_post("/api/auth/login", json={"email": email, "password": password}, **kwargs)


@pytest.fixture
async def session(client, make_user) -> dict:
    """A dashboard user logged in through POST /api/auth/login: its cookie header."""
    user = make_user()
    resp = await login(client, user["email"])
    assert resp.status_code == 200, resp.text
    token = resp.cookies["dashboard_session"].value
    return {**user, "token": token, "headers": {"Cookie": f"dashboard_session={token}"}}


@pytest.fixture
def make_emission(admin):
    def make(risk_item_id: int, provider: str = "PROVIDER_A", event: str = "POLICY_CREATED",
             status: str = "FAILED", attempts: int = 1, errors: list | None = None, **fields) -> dict:
        history = errors if errors is not None else (
            [] if status == "SUCCESS" else
            [{"at": "2026-11-22T10:00:00Z", "code": "PROVIDER_UNAVAILABLE", "message": "503 from provider",
              "httpStatus": 503}])
        return admin.execute(
            """INSERT INTO insurance.integration_emissions
                 (risk_item_id, provider, event, status, attempts, error_history, next_retry_at, external_id)
               VALUES (%s, %s, %s, %s, %s, %s, CASE WHEN %s = 'FAILED' THEN now() + interval '1 hour' END, %s)
               RETURNING *""",
            (risk_item_id, provider, event, status, attempts, orjson.dumps(history).decode(), status,
             fields.get("external_id", "EXT-1" if status == "SUCCESS" else None))).fetchone()
    return make


def session_row(admin, token: str) -> dict:
    return admin.execute("SELECT * FROM insurance.dashboard_sessions WHERE token_hash = %s",
                         (hashlib.sha256(token.encode()).digest(),)).fetchone()


@pytest.fixture(scope="session")
def trpc_client_dir() -> Path:
    """tests/dashboard/client with @trpc/client installed from npm (package-lock.json), once per run."""
    npm = shutil.which("npm")
    assert npm and shutil.which("node"), "node and npm are needed to run the real @trpc/client"
    lock = CLIENT_DIR / "package-lock.json"
    stamp = CLIENT_DIR / "node_modules" / f".installed-{hashlib.sha256(lock.read_bytes()).hexdigest()[:16]}"
    if not stamp.exists():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=CLIENT_DIR,
                       check=True, timeout=300)
        stamp.touch()
    return CLIENT_DIR
