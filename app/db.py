"""The asyncpg pool and the one way the app calls SQL: a function, as a role, with claims.

Identity reaches SQL only through the transaction, as in PostgREST: the role is switched and
the token's claims are set with `set_config(..., true)`. Both happen in the same statement
as the call, inside a subquery that is evaluated first, so one call is one round trip and
the settings vanish when the statement's implicit transaction ends:

    SELECT postsales.my_risk_items()
      FROM (SELECT set_config('role', $1, true),
                   set_config('request.jwt.claims', $2, true) OFFSET 0) AS _auth

The app login (`insurance_app`, NOINHERIT) holds no table privilege of its own, so a
function called without the switch is denied; SQL functions always run with `SET
search_path`, which also keeps them from being inlined into the outer statement (where the
login's own privileges would apply).
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import re
import socket
import time
from typing import Any

import asyncpg
import orjson
import structlog

log = structlog.get_logger("app.db")

ANON = "insurance_anon"
HOLDER = "insurance_holder"
CHANNEL = "insurance_channel"
SERVICE = "insurance_service"
DASHBOARD = "insurance_dashboard"

# Who holds a claim or a lease (emission keys, outbox rows): host and process.
PROCESS_NAME = f"{socket.gethostname()}:{os.getpid()}"

_FUNCTION_NAME = re.compile(r"^[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*$")


_AS_ROLE = ("(SELECT set_config('role', $1, true), "
            "set_config('request.jwt.claims', $2, true) OFFSET 0) AS _auth")


# The same, with the claims computed in the statement by a function of $2 (a session token's
# hash): the session is resolved in the call's own round trip. That function runs after the
# role switch and raises when the session is not live.
_AS_SESSION = ("(SELECT set_config('role', $1, true), "
               "set_config('request.jwt.claims', {claims}($2), true) AS claims OFFSET 0) AS _auth")


def _call_sql(function: str, argc: int, claims_function: str | None = None, with_claims: bool = False) -> str:
    for name in (function, claims_function or "a.b"):
        if not _FUNCTION_NAME.match(name):
            raise ValueError(f"not a schema-qualified function name: {name!r}")
    source = _AS_SESSION.format(claims=claims_function) if claims_function else _AS_ROLE
    # with_claims: the claims the statement computed come back beside the value (a second column).
    extra = ", _auth.claims" if with_claims and claims_function else ""
    return f"SELECT {function}({', '.join(f'${i}' for i in range(3, argc + 3))}){extra} FROM {source}"


async def _init_connection(conn: asyncpg.Connection) -> None:
    # json and jsonb arrive as text: resources pass SQL-built JSON through without a
    # decode/encode round trip; call `orjson.loads` where Python needs the value.
    for typ in ("json", "jsonb"):
        await conn.set_type_codec(typ, schema="pg_catalog", encoder=_encode_json,
                                  decoder=lambda v: v, format="text")


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Pool release without asyncpg's reset query (RESET ALL, UNLISTEN *, ...): one round trip
    less per call (about 100 us of CPU on this machine). Safe because a call leaves no session
    state: role and claims are transaction-local and end with the statement, and asyncpg still
    rolls back a transaction left open. Never take session-level locks, LISTEN or SET on a
    pooled connection; use a connection of your own for that.
    """


def _encode_json(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def call_admin(conn, function: str, *args: Any, audit: dict[str, str | None] | None = None) -> Any:
    """The JSON value of `function(*args)` on the operator's psycopg connection (the command
    line's admin.* functions), decoded. `audit` ({"via", "on_behalf_of"}) reaches the audit
    row through settings of the call's transaction (insurance.audit_via,
    insurance.audit_on_behalf_of), read by insurance.record_audit."""
    if not _FUNCTION_NAME.match(function):
        raise ValueError(f"not a schema-qualified function name: {function!r}")
    if audit is not None:
        conn.execute("SELECT pg_catalog.set_config('insurance.audit_via', %s, true),"
                     " pg_catalog.set_config('insurance.audit_on_behalf_of', %s, true)",
                     (audit.get("via") or "", audit.get("on_behalf_of") or ""))
    placeholders = ", ".join(["%s"] * len(args))
    args = tuple(orjson.dumps(a).decode() if isinstance(a, dict) else a for a in args)  # jsonb
    raw = conn.execute(f"SELECT {function}({placeholders})::text AS value", args).fetchone()
    row = raw["value"] if isinstance(raw, dict) else raw[0]
    return None if row is None else orjson.loads(row)


class DatabaseBusy(Exception):
    """A pooled connection did not come free within DB_ACQUIRE_TIMEOUT. Retryable: the HTTP
    surfaces answer 503 DATABASE_BUSY with Retry-After (app/errors.py), as for a statement or a
    lock wait that took too long. Raised here, translated at the edge: this module knows no HTTP."""


class DatabaseUnavailable(ConnectionError):
    """No primary answers: the one we held is gone (a failover, a restart) or no host of the URL
    accepts a read-write session yet. Retryable: the HTTP surfaces answer 503
    DATABASE_UNAVAILABLE with Retry-After. An OSError, so that every `except OSError` of the
    worker and the pipeline (a database away) takes it as it takes a refused connection."""


# A lost session, a server going down or in recovery, a standby where a primary was expected:
# class 08 (connection exceptions), 57P01-57P03 (admin/crash shutdown, cannot connect now) and
# 25006 (read-only transaction). 57014 (a cancelled statement) is DATABASE_BUSY instead.
_UNAVAILABLE_STATES = frozenset({"57P01", "57P02", "57P03", "25006"})


def unavailable(exc: BaseException) -> bool:
    """Whether `exc` says that the primary is out of reach (retry later), not that the call is wrong."""
    if isinstance(exc, (OSError, asyncpg.InterfaceError, asyncpg.exceptions.TargetServerAttributeNotMatched)):
        return True
    if isinstance(exc, asyncpg.PostgresError):
        state = exc.sqlstate or ""
        return state.startswith("08") or state in _UNAVAILABLE_STATES
    return False


# Connecting gives up after this many seconds (asyncpg's default is 60): a host that drops
# packets must not hold a request longer than a failover takes.
CONNECT_TIMEOUT = 5.0


class Identity:
    """Who a call runs as: a surface role and the claims (JSON text) that SQL reads through
    insurance.claim(). The credential hooks of app/auth.py put one on `req.context.identity`."""

    __slots__ = ("claims_from", "claims_json", "learns", "role")

    def __init__(self, role: str, claims_json: str | None,
                 claims_from: tuple[str, Any] | None = None, learns: bool = False) -> None:
        self.role = role
        self.claims_json = claims_json
        # (function, argument): the claims are computed by the call's own statement instead,
        # e.g. a session looked up and checked in the same round trip (call_in_session).
        self.claims_from = claims_from
        # With claims_from: the first call's statement also hands the claims back, and they are
        # kept here (claims_from cleared), so that later calls carry them instead of resolving
        # the session again (a tRPC batch: one resolution for all its calls).
        self.learns = learns


class Database:
    """Calls SQL functions by name as a given role; holds no SQL text of its own."""

    def __init__(self, dsn: str, min_size: int = 2, max_size: int = 10,
                 statement_cache_size: int = 256, acquire_timeout: float | None = 3.0,
                 read_dsn: str = "", read_max_lag: float = 1.0) -> None:
        self.dsn = dsn
        self.statement_cache_size = statement_cache_size
        self.min_size = min_size
        self.max_size = max_size
        self.acquire_timeout = acquire_timeout
        self.pool: asyncpg.Pool | None = None
        self._gate: asyncio.Semaphore | None = None
        self._sql: dict[tuple[str, int, str | None, bool], str] = {}
        # READ_DATABASE_URL: a standby for the reads that may go there (read_as).
        self.replica: Replica | None = Replica(self, read_dsn, read_max_lag) if read_dsn else None

    async def open(self) -> None:
        # Callers queue here, first come first served, and find a free connection in the
        # pool. asyncpg's own wait (asyncio.Queue.get) is not fair: a waiter woken by a
        # release loses the connection to a newly arrived request and goes to the back of the
        # queue. With 64 connections on a pool of 10 that made the holder route's p99 6-9x its
        # median; behind this gate it stays near the bare endpoint's (bench/postsales.py).
        self._gate = asyncio.Semaphore(self.max_size)
        try:
            self.pool = await self._create_pool(self.min_size)
        except (OSError, asyncpg.PostgresError) as exc:
            # Start anyway: /healthz answers, /readyz says 503 until the database is back.
            log.error("database_unreachable_at_startup", error=type(exc).__name__)
            self.pool = await self._create_pool(0)
        if self.replica is not None:
            await self.replica.open()

    def _create_pool(self, min_size: int, dsn: str | None = None):
        return asyncpg.create_pool(
            dsn or self.dsn, min_size=min_size, max_size=self.max_size, init=_init_connection,
            # 256: every call is then one Bind/Execute of a prepared statement. 0 through
            # PgBouncer in transaction mode before 1.21 (DB_STATEMENT_CACHE_SIZE), where a
            # named statement prepared on one server connection is unknown on the next.
            statement_cache_size=self.statement_cache_size,
            reset=_keep_session, timeout=CONNECT_TIMEOUT,
        )

    async def close(self) -> None:
        if self.replica is not None:
            await self.replica.close()
        if self.pool is not None:
            await self.pool.close()
            self.pool = None

    async def call(self, role: str, claims: str | None, function: str, *args: Any) -> Any:
        """The value of `function(*args)` run as `role` with `claims` (JSON text).

        Entry-point functions return one value: json(b) for resources to pass through,
        a scalar, or a composite (an asyncpg Record). A set-returning function would be
        evaluated in an order SQL does not promise, so none is called this way.
        """
        return await self._fetchval(function, None, role, claims or "", args)

    async def call_in_session(self, role: str, claims_function: str, session: bytes, function: str,
                              *args: Any) -> Any:
        """`function(*args)` as `role` with the claims that `claims_function(session)` answers,
        computed in the same statement: one round trip for the session and the call."""
        return await self._fetchval(function, claims_function, role, session, args)

    async def _fetchval(self, function: str, claims_function: str | None, role: str, second: Any,
                        args: tuple, with_claims: bool = False, writer: Any = None,
                        on: Replica | None = None) -> Any:
        """The call on the primary, or on the replica `on`; `writer` (a caller's key): note the
        primary's WAL position after the call, so that this caller's next reads wait for it."""
        assert self.pool is not None, "Database.open() was not awaited"
        key = (function, len(args), claims_function, with_claims)
        sql = self._sql.get(key)
        if sql is None:
            sql = self._sql[key] = _call_sql(function, len(args), claims_function, with_claims)
        # Waiting for a pooled connection ends too (DB_ACQUIRE_TIMEOUT): 503 DATABASE_BUSY, as
        # when the login's statement_timeout or lock_timeout (set on the login role) passes.
        # The wait is at the gate (see open()); behind it a connection is free at once.
        # A free gate is taken without arming a timer: the common case stays cheap.
        gate, pool = (self._gate, self.pool) if on is None else (on.gate, on.pool)
        if gate.locked():
            try:
                async with asyncio.timeout(self.acquire_timeout):
                    await gate.acquire()
            except TimeoutError:
                raise DatabaseBusy("no pooled connection came free in time") from None
        else:
            await gate.acquire()
        try:
            # Behind the gate a connection is free at once; pool.acquire(timeout=...) would
            # cost a task per call (asyncio.wait_for) for a wait that does not happen.
            # A URL of several hosts (target_session_attrs=read-write) finds the primary again
            # when the pool reconnects after a failover; until then the call fails here.
            try:
                conn = await pool.acquire()
                try:
                    if with_claims:
                        return tuple(await conn.fetchrow(sql, role, second, *args))
                    value = await conn.fetchval(sql, role, second, *args)
                    if writer is not None:  # committed: its position is at or before this one
                        self.replica.wrote(writer, await conn.fetchval(_WAL_POSITION))
                    return value
                except asyncpg.InternalClientError as exc:
                    # A backend ending a session idle in the pool (its postmaster died in a
                    # failover, pg_terminate_backend) sends a FATAL first; asyncpg takes the unasked
                    # message as a protocol error, fails the connection's next operation with
                    # InternalClientError ("cannot switch to state 12; another operation (2) is in
                    # progress") and aborts it before the socket's close arrives: a lost session.
                    # One that leaves the connection open stays a 500 (tests/test_db_unavailable.py).
                    if conn.is_closed():
                        raise DatabaseUnavailable(f"{type(exc).__name__}: {exc}") from exc
                    raise
                finally:
                    await pool.release(conn)
            except Exception as exc:
                if unavailable(exc) and not isinstance(exc, DatabaseUnavailable):
                    raise DatabaseUnavailable(f"{type(exc).__name__}: {exc}") from exc
                raise
        finally:
            gate.release()

    def call_as(self, identity: Identity, function: str, *args: Any):
        """`call` as the identity a credential hook verified (its role and claims)."""
        if identity.claims_from is not None:
            if identity.learns:
                return self._call_learning(identity, function, args)
            return self.call_in_session(identity.role, *identity.claims_from, function, *args)
        if self.replica is not None:
            # The caller may have written: its next reads on the replica wait for this call.
            return self._fetchval(function, None, identity.role, identity.claims_json or "", args,
                                  writer=Replica.caller(identity))
        return self.call(identity.role, identity.claims_json, function, *args)

    async def read_as(self, identity: Identity, function: str, *args: Any) -> Any:
        """`call_as` for a function that only reads: on the replica (READ_DATABASE_URL) when it is
        fresh enough for this caller (Replica.serves), else on the primary."""
        if identity.claims_from is not None:
            return await self.call_as(identity, function, *args)
        replica = self.replica
        if replica is not None and replica.serves(identity):
            try:
                return await self._fetchval(function, None, identity.role, identity.claims_json or "", args,
                                            on=replica)
            except DatabaseUnavailable:
                replica.lost()  # a read may be asked again: the primary answers it
        return await self.call(identity.role, identity.claims_json, function, *args)

    async def _call_learning(self, identity: Identity, function: str, args: tuple) -> Any:
        """call_in_session that keeps the claims its statement computed on the identity."""
        claims_function, session = identity.claims_from
        value, claims = await self._fetchval(function, claims_function, identity.role, session, args, True)
        identity.claims_json, identity.claims_from = claims, None
        return value

    async def ping(self) -> list[str]:
        """Names of the deployed sqitch changes of this project (also proves the database answers)."""
        assert self.pool is not None
        # Through the gate as well, so that behind it a pooled connection is always free.
        async with asyncio.timeout(self.acquire_timeout), self._gate:
            try:
                rows = await self.pool.fetch(
                    "SELECT change FROM sqitch.changes WHERE project = 'insurance'")
            except Exception as exc:
                if unavailable(exc):
                    raise DatabaseUnavailable(f"{type(exc).__name__}: {exc}") from exc
                raise
        return [r["change"] for r in rows]


# The primary's WAL position after a caller's call (bytes from 0/0), and the state of a replica.
_WAL_POSITION = "SELECT (pg_catalog.pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint"
# The cluster a server belongs to: a physical standby shares its primary's identifier.
_SYSTEM = "SELECT system_identifier FROM pg_catalog.pg_control_system()"
# What the replica is: in recovery (a standby), of which cluster, and how far it has replayed.
_REPLICA_STATE = """
SELECT pg_catalog.pg_is_in_recovery() AS standby,
       (SELECT c.system_identifier FROM pg_catalog.pg_control_system() c) AS system,
       (pg_catalog.pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint AS replayed"""


class Replica:
    """A standby that takes reads (READ_DATABASE_URL), while it is fresh enough.

    Every WATCH_SECONDS the primary's WAL position and then the replica's replayed position are
    read (one query each, nothing a login needs privileges for). The replica's lag is the age
    of the newest primary position it has replayed: 0 when it has all the primary had a moment
    before, growing while it stands still. A read goes to it when that lag is at most
    READ_MAX_LAG and it has replayed the caller's last write through this process: after each
    call of a caller (a channel, a holder) on the primary, the primary's position is kept for
    `keep` seconds, and until the replica is past it the caller reads the primary. A replica
    that fails is left until its next good look, and the read goes to the primary.

    Only a standby of this primary serves: a server in recovery whose system identifier is the
    primary's. Any other (a copy that is not replicating, a promoted one, another cluster) would
    pass the freshness check with its own positions and serve what the primary no longer says
    (a revoked channel's items): it is refused at every look, logged once.
    """

    WATCH_SECONDS = 0.2

    def __init__(self, db: Database, dsn: str, max_lag: float) -> None:
        self.db = db
        self.dsn = dsn
        self.max_lag = max_lag
        # After this long a write is older than any lag the replica may have and still serve.
        self.keep = 2 * max_lag + 2 * self.WATCH_SECONDS + 1
        self.pool: asyncpg.Pool | None = None
        self.gate = asyncio.Semaphore(db.max_size)
        self.replayed = -1              # its replayed position at the last look; -1: not usable
        self.lag = float("inf")
        self.writes: dict[tuple[str, str], tuple[int, float]] = {}  # caller -> (position, until)
        self._primary: collections.deque[tuple[float, int]] = collections.deque()  # (time, position)
        self._watcher: asyncio.Task | None = None
        self.system: int | None = None  # the primary's system identifier, read once
        self.refused: str | None = None  # why the replica is not a standby of the primary, if so

    @staticmethod
    def caller(identity: Identity) -> tuple[str, str] | None:
        """Whose writes these are: the role and the token's subject (a channel, a holder)."""
        claims = getattr(identity, "claims", None)
        return (identity.role, str(claims.get("sub"))) if isinstance(claims, dict) else None

    async def open(self) -> None:
        try:
            self.pool = await self.db._create_pool(1, self.dsn)
        except (OSError, asyncpg.PostgresError) as exc:
            log.error("replica_unreachable_at_startup", error=type(exc).__name__)
            self.pool = await self.db._create_pool(0, self.dsn)
        self._watcher = asyncio.create_task(self._watch())

    async def close(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        if self.pool is not None:
            await self.pool.close()

    async def _watch(self) -> None:
        while True:
            try:
                async with asyncio.timeout(max(1.0, self.max_lag)):
                    async with self.db._gate:  # behind the gate, as every primary call
                        primary = await self.db.pool.fetchval(_WAL_POSITION)
                        if self.system is None:
                            self.system = await self.db.pool.fetchval(_SYSTEM)
                    state = await self.pool.fetchrow(_REPLICA_STATE)
                    if self.standby_of_primary(state["standby"], state["system"]):
                        self.look(primary, state["replayed"])
                    else:
                        self.lost()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - either away: the replica's lag is unknown, the primary reads
                if self.replayed >= 0:
                    log.warning("replica_unusable", error=type(exc).__name__)
                self.lost()
            await asyncio.sleep(self.WATCH_SECONDS)

    def look(self, primary: int, replayed: int, now: float | None = None) -> None:
        """Record a look: the primary's position, then the replica's replayed one."""
        now = time.monotonic() if now is None else now
        samples = self._primary
        samples.append((now, primary))
        while len(samples) > 1 and samples[1][0] < now - self.keep:
            samples.popleft()
        # The newest primary position the replica has replayed is at most this old.
        caught_up = next((t for t, position in reversed(samples) if position <= replayed), None)
        self.replayed = replayed
        self.lag = now - caught_up if caught_up is not None else now - samples[0][0] + self.WATCH_SECONDS

    def lost(self) -> None:
        self.replayed, self.lag = -1, float("inf")

    def standby_of_primary(self, standby: bool, system: int) -> bool:
        """Whether the replica is a standby of this primary; a refusal is logged when it starts."""
        refused = None if standby and system == self.system else \
            "not in recovery: not a standby" if not standby else "a standby of another cluster"
        if refused and refused != self.refused:
            log.error("replica_refused", reason=refused)
        self.refused = refused
        return refused is None

    def wrote(self, caller: tuple[str, str] | None, position: int) -> None:
        if caller is None:
            return
        now = time.monotonic()
        if len(self.writes) > 10000:  # bounded: drop what has expired
            self.writes = {k: v for k, v in self.writes.items() if v[1] > now}
        self.writes[caller] = (position, now + self.keep)

    def serves(self, identity: Identity) -> bool:
        """Whether a read of this caller may go to the replica now."""
        if self.replayed < 0 or self.lag > self.max_lag:
            return False
        written = self.writes.get(self.caller(identity))
        return written is None or written[0] <= self.replayed or written[1] < time.monotonic()
