"""Shared fixtures: the app over ASGI, an operator connection, data factories, live processes.

Tests run against the real PostgreSQL database that `make test` deployed (DATABASE_URL,
ADMIN_DATABASE_URL), or, when neither is set, one they deploy for themselves (tests/throwaway.py). Each test makes its own data with unique ids instead of truncating, so
tests never depend on each other's rows.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import falcon.testing
import httpx
import orjson
import psycopg
import pytest
from psycopg.rows import dict_row

from app.app import Services, build_services, create_app
from app.config import SECRET_NAMES, Config
from tests import logscan, throwaway

ROOT = Path(__file__).resolve().parent.parent

# Fixtures that tests of several surfaces use (tests/fixtures/): registered here, for every tier.
pytest_plugins = ("tests.fixtures.channels", "tests.fixtures.pipeline")

# Fixed secrets, so that tests can sign tokens of every surface themselves.
TEST_SECRETS = {name: f"test-{name.lower()}-0123456789abcdef0123456789abcdef" for name in SECRET_NAMES}


# What a test needs of the machine beyond PostgreSQL, as a marker: a test that needs what the
# machine lacks fails, never skips; a run leaves it out only on purpose (-m "not needs_root",
# as scripts/test.sh does on such a machine) and the summary says so in capitals.
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def chromium_path() -> str | None:
    """Debian's chromium (CHROMIUM names another), or None."""
    return CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")


NEEDS = {
    "needs_root": (lambda: os.geteuid() == 0,
                   "root (pg_autoctl and pg_ctlcluster run as postgres through runuser; a device node is made)"),
    "needs_chromium": (lambda: chromium_path() is not None,
                       "Debian's chromium (scripts/setup.sh installs it; CHROMIUM names another)"),
}
_left_out: dict[str, int] = {}


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker, (present, what) in NEEDS.items():
        if item.get_closest_marker(marker) and not present():
            pytest.fail(f"this test needs {what}, which this machine lacks: leave it out on purpose with "
                        f"-m 'not {marker}' (scripts/test.sh does, and says so)", pytrace=False)


def pytest_deselected(items: list[pytest.Item]) -> None:
    for item in items:
        expression = item.config.getoption("markexpr") or ""
        for marker in NEEDS:
            if marker in expression and item.get_closest_marker(marker):  # left out for what it needs
                _left_out[marker] = _left_out.get(marker, 0) + 1


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    for marker, count in _left_out.items():
        terminalreporter.write_line(f"NOT RUN ON PURPOSE: {count} test(s) marked {marker} (they need "
                                    f"{NEEDS[marker][1]})", red=True, bold=True)


def child_environ(**overrides: str) -> dict[str, str]:
    """The environment for the app or a child process under test."""
    if "DATABASE_URL" not in overrides:
        throwaway.ensure()
    # SANDBOX_SMTP_PORT 0: a test's sandbox catches no mail unless the test says where (1025
    # belongs to the developer's `make run`). Every test client calls from 127.0.0.1: the
    # per-IP OTP limits are off unless a test sets them.
    env = {**os.environ, "APP_ENV": "test", "SANDBOX_SMTP_PORT": "0", **TEST_SECRETS,
           "POSTSALES_OTP_IP_PER_HOUR": "0", "POSTSALES_VERIFY_IP_PER_HOUR": "0"}
    env.update(overrides)
    return env


@pytest.fixture(scope="session")
def config() -> Config:
    return Config.from_env(child_environ())


@pytest.fixture(scope="session")
def services(config: Config) -> Services:
    return build_services(config)


@pytest.fixture(scope="session")
def app(config: Config, services: Services):
    return create_app(config, services)


@pytest.fixture(scope="session")
async def client(app):
    """One ASGI lifespan (one pool) for the whole session: ASGIConductor, not TestClient."""
    async with falcon.testing.ASGIConductor(app) as conductor:
        yield conductor


@pytest.fixture(scope="session")
def admin() -> Iterator[psycopg.Connection]:
    """The operator's connection (superuser on the test database), autocommit."""
    throwaway.ensure()
    with psycopg.connect(os.environ["ADMIN_DATABASE_URL"], autocommit=True, row_factory=dict_row) as conn:
        yield conn


def pytest_configure(config) -> None:
    throwaway._pytest_config.append(config)


def pytest_sessionfinish(session, exitstatus) -> None:
    throwaway.drop_made()  # the database this run made for itself, if it made one
    # No stack of this run may have logged an e-mail address (tests/logscan.py): the run fails.
    found = logscan.finish()
    if found:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = (f"E-MAIL ADDRESSES IN THE LOGS of this run's stacks ({len(found)} lines, kept in "
                   f"{logscan.folder()}):\n" + "\n".join(found[:20]))
        if reporter is not None:
            reporter.write_line(message, red=True)
        else:
            print(message, file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def unique(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def make_package(admin):
    def make(variants: tuple[str, ...] = ("travel",), sales: str | None = None,
             post_sales: str | None = None, **fields: Any) -> dict:
        pkg = admin.execute(
            """INSERT INTO insurance.packages (uid, name, sales_integration_slug, post_sales_integration_slug)
               VALUES (%s, %s, %s, %s) RETURNING *""",
            (fields.get("uid", unique("pkg")), fields.get("name", "Test package"), sales, post_sales),
        ).fetchone()
        for code in variants:
            admin.execute(
                """INSERT INTO insurance.package_variants (package_id, code, name, coverages, premium)
                   VALUES (%s, %s, %s, %s, %s)""",
                (pkg["id"], code, code.title(), orjson.dumps([{"code": "BASIC", "limit": 1000}]).decode(), 19.9))
        return pkg
    return make


@pytest.fixture
def make_risk_item(admin, make_package):
    def make(package: dict | None = None, holder_email: str | None = None, channel_id: str | None = None,
             variant: str = "travel", beneficiaries: list[dict] | None = None, **fields: Any) -> dict:
        package = package or make_package(variants=(variant,))
        item = admin.execute(
            """INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant, insured_subject, metadata)
               VALUES (%s, %s, %s, %s, %s, %s) RETURNING *""",
            (package["id"], channel_id, fields.get("policy_uid", unique("pol")), variant,
             orjson.dumps(fields.get("insured_subject", {"name": "Ada Lovelace", "phone": "+34600000000"})).decode(),
             orjson.dumps(fields.get("metadata", {})).decode()),
        ).fetchone()
        rows = list(beneficiaries or [])
        if holder_email:
            # The holder takes what the others leave: an item's shares add up to at most 100.
            rest = sum(b.get("share", 0) for b in rows)
            rows.insert(0, {"name": "Holder", "email": holder_email, "is_holder": True, "share": 100 - rest})
        for b in rows:
            admin.execute(
                """INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
                   VALUES (%s, %s, %s, %s, %s)""",
                (item["id"], b["name"], b.get("email"), b.get("is_holder", False), b.get("share", 0)))
        return item
    return make


def wait_for(check: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """check()'s first truthy value, asked every 0.1 s; fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 20.0, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before {url} answered")
        try:
            if httpx.get(url, timeout=1).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer within {timeout}s")


def app_process(args: list[str], env: dict[str, str], cwd: Path = ROOT, **popen: Any) -> subprocess.Popen:
    """`python -m app ...` as a child process whose logs (stdout) go to this run's log folder,
    scanned for e-mail addresses at the end of the run (tests/logscan.py)."""
    sink = logscan.sink(args[0])
    try:
        return subprocess.Popen([sys.executable, "-m", "app", *args], env=env, cwd=cwd, stdout=sink, **popen)
    finally:
        if sink is not None:
            sink.close()  # the child holds its own copy


@contextlib.contextmanager
def running(args: list[str], env: dict[str, str], ready_url: str | None = None,
            cwd: Path = ROOT) -> Iterator[subprocess.Popen]:
    """A real child process (`python -m app ...`), stopped with SIGTERM at the end; `cwd` is the
    code it runs (another release's files, tests/system/test_upgrade.py)."""
    proc = app_process(args, env, cwd=cwd)
    try:
        if ready_url:
            wait_http(ready_url, process=proc)
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def start_make_run(env: dict[str, str]) -> subprocess.Popen:
    """`make run` in a session of its own, as a terminal runs it; stop it with stop_make_run."""
    return subprocess.Popen(["make", "run"], cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def stop_make_run(proc: subprocess.Popen) -> tuple[str, bool]:
    """Ctrl-C (SIGINT to the whole group); (its output, whether it stopped within 20 s).
    A group that does not stop is killed, so no test leaves servers behind."""
    os.killpg(proc.pid, signal.SIGINT)
    try:
        return proc.communicate(timeout=20)[0], True
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.communicate()[0], False


@pytest.fixture(scope="session")
def live_api() -> Iterator[str]:
    """The API served by a real uvicorn process; its base URL."""
    port = free_port()
    env = child_environ(PORT=str(port))
    with running(["serve", "--port", str(port)], env, f"http://127.0.0.1:{port}/healthz"):
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="session")
def sandbox(admin) -> Iterator[str]:
    """The provider sandbox as a real process, with every provider pointed at it; its base URL.

    Shared by the whole session (so one configuration holds); tests that inject faults clear
    them with `DELETE {sandbox}/_sandbox/faults`.
    """
    from app.sandbox.credentials import auth_configs
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    throwaway.require(admin, "point every insurer at this session's sandbox")
    with running(["sandbox", "--port", str(port)], child_environ(), f"{url}/_sandbox/health"):
        for slug, auth_config in auth_configs(url).items():
            admin.execute("SELECT integrations.set_provider_config(%s, %s)", (slug, orjson.dumps(auth_config).decode()))
        yield url
