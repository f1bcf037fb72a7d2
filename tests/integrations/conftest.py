"""The emission pipeline as real processes: the provider sandbox, the API and the worker.

Small backoff settings (base 1 s, cap 2 s, 3 attempts) so that retries happen within a test,
a short worker lease (3 s) so that a killed worker's rows come back quickly, and the chat
webhook pointed at the sandbox's sink.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from typing import Any, Iterator

import httpx
import orjson
import psycopg
import pytest

from tests import throwaway
from tests.conftest import ROOT, child_environ, free_port, running, unique, wait_for

MAX_ATTEMPTS = 3


class Stack:
    def __init__(self, sandbox: str, api: str, env: dict[str, str]) -> None:
        self.sandbox = sandbox
        self.api = api
        self.env = env

    @contextlib.contextmanager
    def worker(self, *args: str) -> Iterator[subprocess.Popen]:
        with running(["worker", *args], self.env) as proc:
            yield proc

    def start_worker(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "app", "worker", *args], env=self.env, cwd=ROOT,
                                stdout=subprocess.DEVNULL if not os.environ.get("TEST_VERBOSE") else None)

    def fault(self, **fault: Any) -> None:
        httpx.post(f"{self.sandbox}/_sandbox/faults", json=fault).raise_for_status()

    def clear_faults(self) -> None:
        httpx.delete(f"{self.sandbox}/_sandbox/faults").raise_for_status()

    def requests(self, provider: str | None = None) -> list[dict]:
        params = {"limit": 100000, **({"provider": provider} if provider else {})}
        return httpx.get(f"{self.sandbox}/_sandbox/requests", params=params).json()["requests"]


@contextlib.contextmanager
def start_stack(**settings: str) -> Iterator[Stack]:
    """The sandbox and the API as real processes, the providers pointed at the sandbox.

    The stack starts from a quiet outbox: rows and retries left by an earlier module's stack
    (whose API is gone) would otherwise be delivered to this one and use up its faults.
    """
    throwaway.ensure()
    with psycopg.connect(os.environ["ADMIN_DATABASE_URL"], autocommit=True) as conn:
        throwaway.require(conn, "quiet the outbox and point every insurer at a sandbox of the tests")
        conn.execute("UPDATE outbox.http_requests SET delivered_at = now(), lease_until = NULL "
                     "WHERE delivered_at IS NULL")
        conn.execute("UPDATE insurance.integration_emissions SET status = 'ABANDONED', next_retry_at = NULL "
                     "WHERE status = 'FAILED'")
    sandbox_port, api_port = free_port(), free_port()
    sandbox = f"http://127.0.0.1:{sandbox_port}"
    api = f"http://127.0.0.1:{api_port}"
    env = child_environ(PORT=str(api_port), PUBLIC_BASE_URL=api, CHAT_WEBHOOK_URL=f"{sandbox}/chat/webhook",
                        WORKER_POLL_INTERVAL="0.2", LOG_LEVEL="warning", **settings)
    with running(["sandbox", "--port", str(sandbox_port)], env, f"{sandbox}/_sandbox/health"):
        subprocess.run([sys.executable, "-m", "app", "sandbox", "configure", sandbox], env=env, cwd=ROOT,
                       check=True, stdout=subprocess.DEVNULL)
        with running(["serve", "--port", str(api_port)], env, f"{api}/healthz"):
            yield Stack(sandbox, api, env)


@pytest.fixture(scope="module")
def stack(admin) -> Iterator[Stack]:
    with start_stack(INTEGRATION_MAX_ATTEMPTS=str(MAX_ATTEMPTS), INTEGRATION_RETRY_BASE_SECONDS="1",
                     INTEGRATION_RETRY_CAP_SECONDS="2", WORKER_LEASE_SECONDS="3") as started:
        yield started


@pytest.fixture
def worker(stack) -> Iterator[subprocess.Popen]:
    with stack.worker() as proc:
        yield proc


@pytest.fixture
def insert_items(admin, make_package):
    """Insert risk items with a holder in one statement each (the trigger sees them whole)."""
    def insert(count: int = 1, sales: str | None = "PROVIDER_A", package: dict | None = None) -> list[dict]:
        package = package or make_package(variants=("travel",), sales=sales)
        email = f"{uuid.uuid4().hex[:10]}@example.com"
        with admin.transaction():
            items = admin.execute(
                """INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject)
                   SELECT %s, %s || '-' || n, 'travel', %s FROM generate_series(1, %s) n RETURNING *""",
                (package["id"], unique("pol"), orjson.dumps({"name": "Ada Lovelace", "email": email}).decode(),
                 count)).fetchall()
            for item in items:
                admin.execute("""INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
                                 VALUES (%s, 'Ada Lovelace', %s, true, 100)""", (item["id"], email))
        return items
    return insert


def emission(admin, risk_item_id: int, event: str = "SALES_DISPATCH") -> dict | None:
    return admin.execute("SELECT * FROM insurance.integration_emissions WHERE risk_item_id = %s AND event = %s",
                         (risk_item_id, event)).fetchone()


def final(admin, risk_item_id: int, event: str = "SALES_DISPATCH", timeout: float = 30.0) -> dict:
    """The emission once it is SUCCESS or ABANDONED."""
    return wait_for(lambda: (e := emission(admin, risk_item_id, event)) and e["status"] != "FAILED" and e,
                    timeout, f"a final emission of risk item {risk_item_id}")
