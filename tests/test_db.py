"""Nothing waits forever: a held lock answers 503 DATABASE_BUSY with Retry-After after the
login's lock_timeout (2 s, set on the login role), and so does a request that cannot get a
pooled connection within DB_ACQUIRE_TIMEOUT."""
from __future__ import annotations

import asyncio
import os
import time

import asyncpg
import falcon.testing
import psycopg
import pytest

from app.app import create_app
from app.config import Config
from app.errors import from_database
from tests.conftest import child_environ, unique

OTP_REQUEST = "/api/postsales/v1/auth/otp/request"


@pytest.fixture
def held_otp_lock():
    """An operator session holding the advisory lock that request_otp takes for one e-mail."""
    email = f"{unique('locked')}@example.com"
    with psycopg.connect(os.environ["ADMIN_DATABASE_URL"], autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(hashtext('postsales_otp:' || %s))", (email,))
        yield email


def assert_busy(resp) -> None:
    assert resp.status_code == 503, resp.text
    assert resp.json["error"]["code"] == "DATABASE_BUSY"
    assert resp.headers["Retry-After"] == "1"


async def test_a_held_lock_is_503_database_busy_after_the_lock_timeout(client, held_otp_lock):
    started = time.monotonic()
    async with asyncio.timeout(10):  # without the lock_timeout it would wait as long as the lock
        resp = await client.simulate_post(OTP_REQUEST, json={"email": held_otp_lock})
    assert_busy(resp)
    assert 1.5 < time.monotonic() - started < 4.5, "the role's lock_timeout (2 s) ended the wait"


async def test_no_pooled_connection_in_time_is_503_database_busy(held_otp_lock):
    config = Config.from_env(child_environ(DB_POOL_MIN="1", DB_POOL_MAX="1", DB_ACQUIRE_TIMEOUT="0.3"))
    async with falcon.testing.ASGIConductor(create_app(config)) as client, asyncio.timeout(10):
        stuck = asyncio.ensure_future(client.simulate_post(OTP_REQUEST, json={"email": held_otp_lock}))
        await asyncio.sleep(0.2)  # the only connection now waits for the lock
        started = time.monotonic()
        other = await client.simulate_get("/api/postsales/v1/me/risk-items",
                                          headers={"Authorization": "Bearer a.b.c"})
        assert other.status_code == 401, "no database call: no wait"
        waiting = await client.simulate_post(OTP_REQUEST, json={"email": f"{unique('free')}@example.com"})
        assert_busy(waiting)
        assert time.monotonic() - started < 1.5, "DB_ACQUIRE_TIMEOUT ended the wait, not the lock"
        assert_busy(await stuck)


# -- a primary out of reach (a failover in progress): 503 DATABASE_UNAVAILABLE, never 500 ---------

def _with_hosts(url: str, netloc_hosts: str, query: str = "") -> str:
    """DATABASE_URL with its host:port replaced by `netloc_hosts` (several, comma-separated)."""
    from urllib.parse import urlsplit, urlunsplit
    parts = urlsplit(url)
    user = parts.netloc.rpartition("@")[0]
    return urlunsplit((parts.scheme, f"{user}@{netloc_hosts}", parts.path, query, ""))


def assert_unavailable(resp) -> None:
    assert resp.status_code == 503, resp.text
    assert resp.json["error"]["code"] == "DATABASE_UNAVAILABLE"
    assert resp.headers["Retry-After"] == "2"
    assert "asyncpg" not in resp.text and "Error" not in resp.json["error"]["message"]


async def test_no_host_answers_is_503_database_unavailable():
    from tests.conftest import free_port
    url = _with_hosts(os.environ["DATABASE_URL"], f"127.0.0.1:{free_port()},127.0.0.1:{free_port()}",
                      "target_session_attrs=read-write")
    config = Config.from_env(child_environ(DATABASE_URL=url))
    async with falcon.testing.ASGIConductor(create_app(config)) as client, asyncio.timeout(10):
        assert_unavailable(await client.simulate_post(OTP_REQUEST, json={"email": f"{unique('x')}@example.com"}))
        assert (await client.simulate_get("/readyz")).status_code == 503


async def test_a_read_only_server_is_503_database_unavailable():
    """What a demoted primary (now a standby) answers a write: 25006, retryable, not a 500."""
    url = os.environ["DATABASE_URL"]
    url += ("&" if "?" in url else "?") + "default_transaction_read_only=on"  # a server setting
    config = Config.from_env(child_environ(DATABASE_URL=url))
    async with falcon.testing.ASGIConductor(create_app(config)) as client, asyncio.timeout(10):
        assert_unavailable(await client.simulate_post(OTP_REQUEST, json={"email": f"{unique('x')}@example.com"}))


async def test_a_url_of_several_hosts_finds_the_one_that_answers():
    """A lost first host (a refused port) is skipped: the pool connects to the next."""
    from urllib.parse import urlsplit

    from tests.conftest import free_port
    real = urlsplit(os.environ["DATABASE_URL"])
    url = _with_hosts(os.environ["DATABASE_URL"], f"127.0.0.1:{free_port()},{real.hostname}:{real.port or 5432}",
                      "target_session_attrs=read-write")
    config = Config.from_env(child_environ(DATABASE_URL=url))
    async with falcon.testing.ASGIConductor(create_app(config)) as client, asyncio.timeout(10):
        resp = await client.simulate_post(OTP_REQUEST, json={"email": f"{unique('x')}@example.com"})
        assert resp.status_code == 200, resp.text


def test_a_replicas_lag_is_the_age_of_the_newest_primary_position_it_has_replayed():
    from app.db import Database, Replica
    replica = Replica(Database("postgresql://unused"), "postgresql://unused", max_lag=1.0)
    replica.look(primary=100, replayed=100, now=10.0)
    assert replica.lag == 0, "caught up"
    replica.look(primary=200, replayed=100, now=10.2)
    assert replica.lag == pytest.approx(0.2), "it has what the primary had 0.2 s ago"
    replica.look(primary=300, replayed=100, now=11.5)
    assert replica.lag == pytest.approx(1.5)
    replica.look(primary=300, replayed=300, now=11.7)
    assert replica.lag == 0
    replica.lost()
    assert replica.lag == float("inf") and replica.replayed == -1


# A deploy that replaces a function the app calls (a `sqitch rework` restating it with DROP and
# CREATE, or two changes, each its own transaction) makes it missing, or gone under a call that
# had already looked it up: the answer is a retryable 503, never a 500 (tests/system/test_upgrade.py
# runs a whole upgrade under traffic).

@pytest.fixture
def request_otp_missing(admin):
    """postsales.request_otp away under another name for the test, as between the DROP and
    the CREATE of a deploy; put back (grants, contract and all) afterwards."""
    signatures = [r["sig"] for r in admin.execute(
        "SELECT oid::regprocedure::text AS sig FROM pg_proc WHERE "
        "proname = 'request_otp' AND pronamespace = 'postsales'::regnamespace")]  # every overload
    assert signatures
    for signature in signatures:
        admin.execute(f"ALTER FUNCTION {signature} RENAME TO request_otp_away")
    try:
        yield
    finally:
        for signature in signatures:
            admin.execute(f"ALTER FUNCTION {signature.replace('request_otp', 'request_otp_away', 1)} "
                          "RENAME TO request_otp")


async def test_a_function_missing_in_the_middle_of_a_deploy_is_503_database_busy(client, request_otp_missing):
    resp = await client.simulate_post(OTP_REQUEST, json={"email": f"{unique('deploy')}@example.com"})
    assert_busy(resp)
    assert "request_otp" not in resp.text, "no SQL text reaches a client"


def server_error(sqlstate: str, message: str) -> asyncpg.PostgresError:
    """The exception asyncpg makes of the server's error message with these fields."""
    return asyncpg.PostgresError.new({"S": "ERROR", "C": sqlstate, "M": message})


# Seen here: a function dropped and created again in one transaction while four connections call
# it in a loop fails one call in a few thousand with XX000 "cache lookup failed for function".
@pytest.mark.parametrize("sqlstate, message", [
    ("XX000", "cache lookup failed for function 54682"),
    ("42P01", 'relation "insurance.risk_items" does not exist'),
    ("3F000", 'schema "postsales" does not exist'),
])
def test_what_a_deploy_replaces_under_a_call_is_503_database_busy(sqlstate, message):
    error = from_database(server_error(sqlstate, message))
    assert (error.status, error.code, error.headers) == ("503 Service Unavailable", "DATABASE_BUSY", {"Retry-After": "1"})


def test_another_internal_error_is_still_a_500():
    assert from_database(server_error("XX000", "could not open file")) is None
