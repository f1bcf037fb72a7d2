"""The database a test run may change at will: one that a test run made for itself.

Tests repoint every insurer at their own sandbox, quiet the outbox and abandon failed
emissions. On a running stack's database (`make run`'s), that breaks the stack: its insurers
then point at a sandbox that goes away. So a database made for tests says so in its comment
(scripts/test.sh and `ensure()` write it), and what changes shared configuration first calls
`require()`, which refuses any other database with one clear message.

Without DATABASE_URL and ADMIN_DATABASE_URL, `ensure()` makes such a database on the local
cluster (`python -m app migrate`, about a minute) the first time a test needs one, and
`drop_made()` drops it when the session ends: `.venv/bin/pytest PATHS` runs as written.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
MARK = "throwaway test database"
_made: list[str] = []  # the database this process made, dropped by drop_made()
_pytest_config: list = []  # the session's pytest config (tests/conftest.py), to print past its capture


def _say(text: str) -> None:
    """Shown on the terminal even from inside a test (pytest captures what a test prints)."""
    capture = _pytest_config[0].pluginmanager.getplugin("capturemanager") if _pytest_config else None
    if capture is None:
        sys.stderr.write(text)
        return
    with capture.global_and_fixture_disabled():
        sys.stderr.write(text)
        sys.stderr.flush()


def _server() -> tuple[str, str]:
    return os.environ.get("PGHOST", "127.0.0.1"), os.environ.get("PGPORT", "5432")


def is_throwaway(conn: psycopg.Connection) -> bool:
    """Whether the database `conn` is connected to says it was made for tests."""
    row = conn.execute("SELECT shobj_description(oid, 'pg_database') FROM pg_database "
                       "WHERE datname = current_database()").fetchone()
    comment = row["shobj_description"] if isinstance(row, dict) else row[0]
    return comment == MARK


def require(conn: psycopg.Connection, what: str) -> None:
    """Fails the test, before anything is changed, unless the database was made for tests."""
    if not is_throwaway(conn):
        pytest.fail(
            f"refusing to {what} in database {conn.info.dbname!r}: no test run made it (a running stack's?). "
            "Unset DATABASE_URL and ADMIN_DATABASE_URL (the tests then make a database of their own), or run "
            f"scripts/test.sh PATHS. A database you made for tests: COMMENT ON DATABASE ... IS '{MARK}'.",
            pytrace=False)


def ensure() -> None:
    """DATABASE_URL and ADMIN_DATABASE_URL name a database: the environment's, or one made here."""
    if os.environ.get("ADMIN_DATABASE_URL") or os.environ.get("DATABASE_URL"):
        return
    host, port = _server()
    name = f"insurance_pytest_{os.getpid()}_{int(time.time())}"
    admin_url = f"postgresql://postgres@{host}:{port}/{name}"
    with psycopg.connect(f"postgresql://postgres@{host}:{port}/postgres", autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("COMMENT ON DATABASE {} IS {}").format(sql.Identifier(name), sql.Literal(MARK)))
    _made.append(name)
    _say(f"\n[tests] no DATABASE_URL: deploying a throwaway database {name} "
                         "(python -m app migrate; dropped at the end)\n")
    from tests.conftest import child_environ
    env = child_environ(ADMIN_DATABASE_URL=admin_url, DATABASE_URL=f"postgresql://insurance_app@{host}:{port}/{name}",
                        SQITCH_FULLNAME=os.environ.get("SQITCH_FULLNAME", "pytest"),
                        SQITCH_EMAIL=os.environ.get("SQITCH_EMAIL", "pytest@insurance.invalid"))
    deploy = subprocess.run([sys.executable, "-m", "app", "migrate"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=900)
    _say(deploy.stdout + deploy.stderr)
    if deploy.returncode != 0:
        drop_made()
        raise RuntimeError(f"python -m app migrate failed for the throwaway database (exit {deploy.returncode})")
    _unschedule(name)
    os.environ.update(APP_ENV="test", ADMIN_DATABASE_URL=admin_url, DATABASE_URL=env["DATABASE_URL"])


def _unschedule(name: str) -> None:
    """The database's pg_cron jobs removed (as scripts/test.sh does): a minute sweep landing in
    the middle of a test would make its outcome depend on the clock; a dropped database's job
    would fail every minute."""
    host, port = _server()
    cron_db = os.environ.get("CRON_DATABASE", "postgres")
    try:
        with psycopg.connect(f"postgresql://postgres@{host}:{port}/{cron_db}", autocommit=True) as conn:
            conn.execute("SELECT cron.unschedule(jobid) FROM cron.job WHERE database = %s", (name,))
    except psycopg.Error:
        pass  # no pg_cron here: nothing scheduled


def drop_made() -> None:
    host, port = _server()
    while _made:
        name = _made.pop()
        _unschedule(name)
        with psycopg.connect(f"postgresql://postgres@{host}:{port}/postgres", autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
