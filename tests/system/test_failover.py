"""The failover drill: the primary's machine is lost while the worker drains emissions and a
partner reads its list; pg_auto_failover promotes the standby and nothing is lost or issued twice.

A formation of its own (scripts/ha.sh up: a monitor and two nodes on free ports, under a
folder of /tmp owned by postgres), the sandbox, the API and the worker as real processes on its
two-host URL. Losing a node is SIGKILL to its pg_autoctl service's process group (the keeper,
its Postgres controller, the postmaster), found by the pid that service wrote. The backends lead
groups of their own (PostgreSQL's postmaster children call setsid): they see the postmaster gone
and exit within moments, first sending an idle client the FATAL "terminating connection due to
unexpected postmaster exit", as after a postmaster crash (a machine lost outright would send
nothing). Then `scripts/ha.sh up` brings the node back (it rejoins as a standby) and the drill
runs again the other way.

Marker `failover`: scripts/test.sh runs it in a pytest invocation of its own. It needs root or
the user postgres (pg_autoctl runs as postgres), as on CI and `make test` machines. The figures
(seconds from the kill to the first good read, 503s, emissions lost and issued twice) are printed
and copied into docs/operations.md "High availability".
"""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Self

import httpx
import orjson
import psycopg
import pytest
from psycopg.rows import dict_row

from app.db import CHANNEL as CHANNEL_ROLE
from tests.conftest import ROOT, child_environ, free_port, running, unique, wait_http
from tests.fixtures.pipeline import Stack, wait_for

pytestmark = [
    pytest.mark.failover,
    pytest.mark.needs_root,  # pg_autoctl runs as postgres (runuser)
]

HA = str(ROOT / "scripts" / "ha.sh")
EMISSIONS = 500
RECOVERY_GOAL_SECONDS = 15.0
SWEEP = "insurance-retry-sweep-insurance"


class Formation:
    """A formation made by scripts/ha.sh on ports of its own; removed with `down`."""

    def __init__(self) -> None:
        self.dir = f"/tmp/insurance-ha-drill-{uuid.uuid4().hex[:10]}"
        self.ports = {"monitor": free_port(), "node1": free_port(), "node2": free_port()}
        self.env = {**os.environ, "HA_DIR": self.dir, "HA_MONITOR_PORT": str(self.ports["monitor"]),
                    "HA_NODE1_PORT": str(self.ports["node1"]), "HA_NODE2_PORT": str(self.ports["node2"])}
        self.urls: dict[str, str] = {}

    def up(self) -> None:
        out = subprocess.run([HA, "up"], env=self.env, check=True, capture_output=True, text=True, timeout=300)
        self.urls = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)

    def down(self) -> None:
        subprocess.run([HA, "down"], env=self.env, capture_output=True, timeout=120)

    def monitor(self, sql: str) -> list[dict]:
        with psycopg.connect(host="127.0.0.1", port=self.ports["monitor"], user="postgres",
                             dbname="pg_auto_failover", row_factory=dict_row, connect_timeout=5) as conn:
            return conn.execute(sql).fetchall()

    def primary(self) -> str:
        # The one the monitor wants primary (a lost node's last report still says primary).
        rows = self.monitor("SELECT nodename FROM pgautofailover.node "
                            "WHERE goalstate IN ('single', 'wait_primary', 'primary')")
        assert len(rows) == 1, rows
        return rows[0]["nodename"]

    def query(self, sql: str, *params, node: str | None = None, dbname: str | None = None) -> list[dict] | None:
        """Rows of `sql` on the primary (the two-host URL) or on one node; None while unreachable."""
        url = self.urls["ADMIN_DATABASE_URL"]
        kwargs: dict = {"host": "127.0.0.1", "port": self.ports[node]} if node else {}
        if dbname:
            kwargs["dbname"] = dbname
        try:
            with psycopg.connect(url, row_factory=dict_row, connect_timeout=2, **kwargs) as conn:
                return conn.execute(sql, params).fetchall()
        except psycopg.OperationalError:
            return None

    def lose(self, node: str) -> list[int]:
        """SIGKILL to the node's pg_autoctl service, its keeper and its postmaster; returns every
        process of the tree, gone when this returns (the backends exit on their own)."""
        pidfile = Path(f"{self.dir}/run/pg_autoctl{self.dir}/{node}/pg_autoctl.pid")
        root = int(pidfile.read_text().split()[0])
        # scripts/ha.sh starts each service in a session of its own: the service, its keeper and
        # the postmaster share the group `root`, and one killpg reaches them all at once. Every
        # child of the postmaster leads a group of its own and exits when it sees the postmaster
        # gone, telling an idle client so (a FATAL before its close: tests/test_db_unavailable.py).
        assert os.getpgid(root) == root, "the node's service leads its own process group"
        tree = descendants(root)
        os.killpg(root, signal.SIGKILL)
        wait_for(lambda: not any(Path(f"/proc/{pid}").exists() and not _zombie(pid) for pid in tree),
                 timeout=10, what=f"every process of {node} gone")
        return tree


def _zombie(pid: int) -> bool:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    return True


def descendants(root: int) -> list[int]:
    """`root` and every process below it (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


@pytest.fixture(scope="module")
def formation() -> Iterator[Formation]:
    made = Formation()
    try:
        made.up()
        yield made
    finally:
        made.down()


class PartnerReads:
    """A partner reading its list every 0.1 s in a thread: (monotonic time, status) of each read."""

    def __init__(self, api: str, token: str) -> None:
        self.url = f"{api}/api/gateway/v1/risk-items"
        self.headers = {"Authorization": f"Bearer {token}"}
        self.answers: list[tuple[float, int]] = []
        self.bodies: dict[int, str] = {}
        self.without_retry_after = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=10) as client:
            while not self._stop.is_set():
                try:
                    resp = client.get(self.url, headers=self.headers)
                    status = resp.status_code
                    if status != 200:
                        self.bodies.setdefault(status, resp.text)
                        if status == 503 and not resp.headers.get("Retry-After"):
                            self.without_retry_after += 1
                except httpx.HTTPError:
                    status = 0
                self.answers.append((time.monotonic(), status))
                self._stop.wait(0.1)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(15)

    def since(self, t: float) -> list[int]:
        return [status for at, status in self.answers if at >= t]

    def answering_again(self, t: float) -> float:
        """Seconds from `t` to the read after which every read was answered (the first 200
        after the last failure since `t`)."""
        since = [(at, status) for at, status in self.answers if at >= t]
        last_failure = max((i for i, (_, status) in enumerate(since) if status != 200), default=-1)
        return next(at - t for at, status in since[last_failure + 1:] if status == 200)


@pytest.fixture(scope="module")
def stack(formation: Formation) -> Iterator[Stack]:
    sandbox_port, api_port = free_port(), free_port()
    sandbox, api = f"http://127.0.0.1:{sandbox_port}", f"http://127.0.0.1:{api_port}"
    env = child_environ(DATABASE_URL=formation.urls["DATABASE_URL"],
                        ADMIN_DATABASE_URL=formation.urls["ADMIN_DATABASE_URL"],
                        PORT=str(api_port), PUBLIC_BASE_URL=api, CHAT_WEBHOOK_URL=f"{sandbox}/chat/webhook",
                        WORKER_POLL_INTERVAL="0.2", LOG_LEVEL="warning",
                        # A claim whose answer the lost primary never sent back stays leased to
                        # the worker: 20 s instead of 60 bounds the drain's tail in CI.
                        WORKER_LEASE_SECONDS="20",
                        # An emission whose provider settings could not be read during the
                        # failover is FAILED and retried: after 1-5 s here instead of 60.
                        INTEGRATION_RETRY_BASE_SECONDS="1", INTEGRATION_RETRY_CAP_SECONDS="5")
    env.pop("DATABASE_LISTEN_URL", None)  # the worker LISTENs on the formation's URL too
    with running(["sandbox", "--port", str(sandbox_port)], env, f"{sandbox}/_sandbox/health"):
        subprocess.run([sys.executable, "-m", "app", "sandbox", "configure", sandbox], env=env, cwd=ROOT,
                       check=True, stdout=subprocess.DEVNULL)
        # The API's log (JSON lines on stdout) is kept: a failed drill shows the errors it logged.
        log = tempfile.NamedTemporaryFile(prefix="drill-api-", suffix=".log", delete=False)  # noqa: SIM115 - kept after the drill, closed at its end
        api_process = subprocess.Popen([sys.executable, "-m", "app", "serve", "--port", str(api_port)],
                                       env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_http(f"{api}/healthz", process=api_process)
            stack = Stack(sandbox, api, env)
            stack.api_log = Path(log.name)
            yield stack
        finally:
            api_process.terminate()
            api_process.wait(10)
            os.unlink(log.name)


@pytest.fixture(scope="module")
def partner(formation: Formation, stack: Stack) -> str:
    """A channel with three risk items of a package that dispatches nothing; its access token."""
    key = "ik_" + uuid.uuid4().hex
    with psycopg.connect(formation.urls["ADMIN_DATABASE_URL"], autocommit=True) as conn:
        package = conn.execute("INSERT INTO insurance.packages (uid, name) VALUES (%s, 'Drill reads') RETURNING id",
                               (unique("pkg"),)).fetchone()[0]
        conn.execute("INSERT INTO insurance.package_variants (package_id, code, name) VALUES (%s, 'travel', 'T')",
                     (package,))
        channel = conn.execute("INSERT INTO insurance.channels (name, branches, api_key_hash) VALUES (%s, '{v1}', %s) "
                               "RETURNING id", (unique("channel"), hashlib.sha256(key.encode()).digest())).fetchone()[0]
        conn.execute("INSERT INTO insurance.channel_packages (channel_id, package_id) VALUES (%s, %s)", (channel, package))
        conn.execute("""INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant, insured_subject)
                        SELECT %s, %s, %s || n, 'travel', '{"name": "Reader"}' FROM generate_series(1, 3) n""",
                     (package, channel, unique("read")))
    resp = httpx.get(f"{stack.api}/api/gateway/v1/auth/authorize", headers={"x-api-key": key})
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]["access_token"]


def insert_emissions(formation: Formation, count: int) -> tuple[list[int], set[str]]:
    """`count` risk items of a PROVIDER_A package with a holder: the trigger queues a dispatch each."""
    email = f"{uuid.uuid4().hex[:10]}@example.com"
    with psycopg.connect(formation.urls["ADMIN_DATABASE_URL"], row_factory=dict_row) as conn:
        package = conn.execute("INSERT INTO insurance.packages (uid, name, sales_integration_slug) "
                               "VALUES (%s, 'Drill', 'PROVIDER_A') RETURNING id", (unique("pkg"),)).fetchone()["id"]
        conn.execute("INSERT INTO insurance.package_variants (package_id, code, name) VALUES (%s, 'travel', 'T')",
                     (package,))
        items = conn.execute(
            """INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject)
               SELECT %s, %s || '-' || n, 'travel', %s FROM generate_series(1, %s) n RETURNING id, uid""",
            (package, unique("pol"), orjson.dumps({"name": "Ada Lovelace", "email": email}).decode(), count)).fetchall()
        conn.execute("""INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
                        SELECT id, 'Ada Lovelace', %s, true, 100 FROM unnest(%s::bigint[]) id""",
                     (email, [i["id"] for i in items]))
    return [i["id"] for i in items], {f"{i['uid']}:PROVIDER_A:SALES_DISPATCH" for i in items}


def drill(formation: Formation, stack: Stack, token: str, worker: subprocess.Popen, report) -> tuple[float, str]:
    """Lose the primary's node mid-drain; every emission ends SUCCESS, issued once, no 500."""
    lost = formation.primary()
    stack.fault(provider="PROVIDER_A", count=EMISSIONS, delay=0.3)  # the drain spans the failover
    ids, keys = insert_emissions(formation, EMISSIONS)

    def created() -> list[str]:
        return [r["idempotencyKey"] for r in stack.requests("PROVIDER_A")
                if r.get("idempotencyKey") in keys and r.get("status") == 201]

    logged = len(stack.api_log.read_text(errors="replace").splitlines())
    with PartnerReads(stack.api, token) as reads:
        wait_for(lambda: len(created()) >= 30, timeout=60, what="the drain under way")
        assert len(created()) < EMISSIONS * 0.6, "the drain was nearly done before the loss: the drill proves little"
        killed_at, killed_wall = time.monotonic(), time.time()
        formation.lose(lost)
        deadline = time.monotonic() + 150
        while (succeeded := success_count(formation, ids)) != EMISSIONS and time.monotonic() < deadline:
            time.sleep(0.5)
        assert succeeded == EMISSIONS, (f"{succeeded} of {EMISSIONS} SUCCESS", drain_state(formation, ids),
                                        errors_logged(stack)[-20:])
        drained = time.monotonic() - killed_at
        time.sleep(1)  # a few reads on the new primary after the drain
    stack.clear_faults()
    recovery = reads.answering_again(killed_at)
    statuses = reads.since(killed_at)
    issued = created()
    twice = len(issued) - len(set(issued))
    lost_emissions = EMISSIONS - len(set(issued))
    promoted = formation.primary()
    report(f"lost {lost}, promoted {promoted}: partner reads answered again {recovery:.1f} s after the kill, "
           f"drained {drained:.0f} s after it; "
           f"{statuses.count(503)} answers 503 of {len(statuses)} reads since; "
           f"{sum(1 for s in statuses if s >= 500 and s != 503)} other 5xx; {lost_emissions} emissions lost, "
           f"{twice} issued twice; the API's 503 DATABASE_UNAVAILABLE by cause: "
           f"{unavailable_causes(stack, logged)}")
    assert promoted != lost
    if 500 in [s for _, s in reads.answers]:  # the cause, whole, where CI's log shows it
        report("500 answered; the API logged:\n" + "\n".join(errors_logged(stack)))
    assert 500 not in [s for _, s in reads.answers], (reads.bodies.get(500), errors_logged(stack))
    assert 0 not in statuses, "every read got an answer (none hung up or timed out)"
    assert reads.without_retry_after == 0, "every 503 says when to come back (Retry-After)"
    assert recovery <= RECOVERY_GOAL_SECONDS, f"the API answered again {recovery:.1f} s after the loss"
    assert twice == 0 and lost_emissions == 0
    # What the API answered the worker: never a 500 (the outbox keeps the last status of each row).
    rows = formation.query("SELECT count(*) AS n FROM outbox.http_requests WHERE last_status >= 500 "
                           "AND last_status <> 503")
    assert rows and rows[0]["n"] == 0
    assert worker.poll() is None, "the worker went on after the loss"
    return killed_wall, promoted


def success_count(formation: Formation, ids: list[int]) -> int:
    rows = formation.query("SELECT count(*) AS n FROM insurance.integration_emissions "
                           "WHERE risk_item_id = ANY(%s) AND status = 'SUCCESS'", ids)
    return rows[0]["n"] if rows else -1


def drain_state(formation: Formation, ids: list[int]) -> list[dict] | None:
    """Where the emissions that did not end are: their state and their outbox rows'."""
    return formation.query(
        """SELECT coalesce(e.status, 'none') AS status, e.error_history -> -1 ->> 'code' AS code, count(*) AS n,
                  min(o.attempts) AS attempts, min(o.last_status) AS last_status, min(o.lease_until) AS lease,
                  min(o.deliver_after) AS due, min(left(o.last_error, 200)) AS last_error,
                  (SELECT count(*) FROM insurance.emission_claims) AS claims
             FROM insurance.risk_items i
             LEFT JOIN insurance.integration_emissions e ON e.risk_item_id = i.id
             LEFT JOIN outbox.http_requests o ON o.body #>> '{record,id}' = i.id::text AND o.delivered_at IS NULL
            WHERE i.id = ANY(%s) AND e.status IS DISTINCT FROM 'SUCCESS'
            GROUP BY 1, 2""", ids)


def unavailable_causes(stack: Stack, after_line: int) -> dict[str, int]:
    """What the API's 503 DATABASE_UNAVAILABLE answers logged after line `after_line` of its log
    stood for: asyncpg's exception type (the warning's `cause`) and how many."""
    causes: dict[str, int] = {}
    for line in stack.api_log.read_text(errors="replace").splitlines()[after_line:]:
        if '"database_unavailable"' in line:
            cause = str(orjson.loads(line).get("cause"))
            causes[cause] = causes.get(cause, 0) + 1
    return causes


def errors_logged(stack: Stack) -> list[str]:
    """The API's log lines at level error (the cause of a 500, with its traceback)."""
    return [line[:3000] for line in stack.api_log.read_text(errors="replace").splitlines() if '"error"' in line]


def archives_on_its_timeline(formation: Formation, node: str) -> None:
    """The promoted node archives WAL of its new timeline into the formation's pgBackRest stanza
    (scripts/ha.sh: archive_mode on every node, only a primary archives)."""
    def archived() -> bool:
        rows = formation.query(
            """SELECT a.last_archived_wal IS NOT NULL
                      AND left(a.last_archived_wal, 8) = lpad(upper(to_hex(c.timeline_id)), 8, '0') AS ok
                 FROM pg_stat_archiver a, pg_control_checkpoint() c""", node=node)
        if rows and not rows[0]["ok"]:  # a quiet new primary: close its segment
            formation.query("SELECT pg_switch_wal()", node=node)
        return bool(rows and rows[0]["ok"])
    wait_for(archived, timeout=90, what=f"{node} archiving WAL of its timeline after the failover")


def sweep_ran_after(formation: Formation, since_wall: float, node: str) -> None:
    """The minute sweep ran on `node` (the new primary) after the loss, and is registered once."""
    jobs = formation.query("SELECT count(*) AS n FROM cron.job WHERE jobname = %s", SWEEP, node=node,
                           dbname="postgres")  # cron.database_name
    assert jobs is not None and jobs[0]["n"] == 1, "the sweep is registered once (cron.job came with the data)"
    wait_for(lambda: (rows := formation.query(
        "SELECT extract(epoch FROM last_run_at) AS at FROM insurance.job_runs WHERE job = 'retry_sweep'", node=node))
        and rows[0]["at"] > since_wall, timeout=90, what=f"the minute sweep on {node} after the failover")
    # The node that ran it is the primary: a standby cannot write insurance.job_runs.
    assert formation.query("SELECT pg_is_in_recovery() AS r", node=node)[0]["r"] is False


@contextlib.asynccontextmanager
async def app_reading_from(formation: Formation, standby: str, max_lag: str):
    """The API in this process on the formation, its reads on `standby` (READ_DATABASE_URL)."""
    import falcon.testing

    from app.app import build_services, create_app
    from app.config import Config
    config = Config.from_env(child_environ(
        DATABASE_URL=formation.urls["DATABASE_URL"], ADMIN_DATABASE_URL=formation.urls["ADMIN_DATABASE_URL"],
        READ_DATABASE_URL=f"postgresql://insurance_app@127.0.0.1:{formation.ports[standby]}/insurance",
        READ_MAX_LAG=max_lag))
    services = build_services(config)
    async with falcon.testing.ASGIConductor(create_app(config, services)) as client:
        replica = services.db.replica
        deadline = time.monotonic() + 10
        while replica.replayed < 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert replica.replayed >= 0, "the replica's state is read"
        yield client, services


@contextlib.contextmanager
def replay_paused(formation: Formation, standby: str) -> Iterator[None]:
    """The standby receives WAL but applies none of it (its data stands still)."""
    with psycopg.connect(host="127.0.0.1", port=formation.ports[standby], user="postgres", dbname="insurance",
                         autocommit=True) as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
        try:
            yield
        finally:
            conn.execute("SELECT pg_wal_replay_resume()")


async def test_reads_go_to_the_standby_but_never_behind_the_callers_own_write(formation):
    """READ_DATABASE_URL: the gateway's list and the holder's reads on the standby; a caller's own
    write through this process is always seen; a standby lagging beyond READ_MAX_LAG is skipped."""
    standby = next(r["nodename"] for r in formation.monitor(
        "SELECT nodename FROM pgautofailover.node WHERE reportedstate = 'secondary'"))
    key, email = "ik_" + uuid.uuid4().hex, f"{unique('holder')}@example.com"
    with psycopg.connect(formation.urls["ADMIN_DATABASE_URL"], autocommit=True, row_factory=dict_row) as admin:
        package = admin.execute("INSERT INTO insurance.packages (uid, name) VALUES (%s, 'Reads') RETURNING id, uid",
                                (unique("pkg"),)).fetchone()
        admin.execute("INSERT INTO insurance.package_variants (package_id, code, name) VALUES (%s, 'travel', 'T')",
                      (package["id"],))
        channel = admin.execute("INSERT INTO insurance.channels (name, branches, api_key_hash) "
                                "VALUES (%s, '{v1}', %s) RETURNING id",
                                (unique("channel"), hashlib.sha256(key.encode()).digest())).fetchone()["id"]
        admin.execute("INSERT INTO insurance.channel_packages (channel_id, package_id) VALUES (%s, %s)",
                      (channel, package["id"]))
        item = admin.execute(
            """INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant, insured_subject)
               VALUES (%s, %s, %s, 'travel', '{"name": "Ada", "phone": "+34 600 000 000"}') RETURNING id""",
            (package["id"], channel, unique("pol"))).fetchone()["id"]
        admin.execute("INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share) "
                      "VALUES (%s, 'Ada', %s, true, 100)", (item, email))

    def insert_behind_the_api() -> None:  # a write by someone else: nobody's LSN is kept for it
        with psycopg.connect(formation.urls["ADMIN_DATABASE_URL"], autocommit=True) as admin:
            admin.execute("""INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant, insured_subject)
                             VALUES (%s, %s, %s, 'travel', '{"name": "Other"}')""", (package["id"], channel, unique("pol")))

    async with app_reading_from(formation, standby, "60") as (client, services):
        replica = services.db.replica
        token = (await client.simulate_get("/api/gateway/v1/auth/authorize", headers={"x-api-key": key})
                 ).json["data"]["access_token"]
        partner = {"Authorization": f"Bearer {token}"}
        holder = {"Authorization": f"Bearer {services.postsales_tokens.issue(email, email=email)}"}
        mine = f"/api/postsales/v1/risk-items/{item}"
        with replay_paused(formation, standby):
            insert_behind_the_api()
            listed = await client.simulate_get("/api/gateway/v1/risk-items", headers=partner)
            assert listed.status_code == 200 and listed.json["data"]["total"] == 1, \
                "the list came from the standby, which has not replayed the other write"
            created = await client.simulate_post("/api/gateway/v1/risk-items", headers=partner, json={
                "package_uid": package["uid"], "policy_uid": unique("POL"), "variant": "travel",
                "insured_subject": {"name": "Grace"}})
            assert created.status_code == 201, created.text
            listed = await client.simulate_get("/api/gateway/v1/risk-items", headers=partner)
            assert listed.json["data"]["total"] == 3, "after its own write the caller reads the primary"
            got = await client.simulate_get(f"/api/gateway/v1/risk-items/{created.json['data']['id']}",
                                            headers=partner)
            assert got.status_code == 200, "its own new item, at once"

            assert (await client.simulate_get(mine, headers=holder)).status_code == 200
            patched = await client.simulate_patch(mine, headers=holder, json={"insured_subject": {"phone": "+34 611"}})
            assert patched.status_code == 200, patched.text
            read = await client.simulate_get(mine, headers=holder)
            assert read.json["data"]["insured_subject"]["phone"] == "+34 611", "the holder reads its own change"
        # Replayed again: the standby serves the caller once it is past the caller's write.
        written = replica.writes[(CHANNEL_ROLE, str(channel))][0]
        deadline = time.monotonic() + 20
        while replica.replayed < written and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert replica.serves(services.gateway_tokens["v1"].verify(token))
        listed = await client.simulate_get("/api/gateway/v1/risk-items", headers=partner)
        assert listed.json["data"]["total"] == 3

    async with app_reading_from(formation, standby, "1") as (client, services):
        replica = services.db.replica
        token = (await client.simulate_get("/api/gateway/v1/auth/authorize", headers={"x-api-key": key})
                 ).json["data"]["access_token"]
        partner = {"Authorization": f"Bearer {token}"}
        with replay_paused(formation, standby):
            insert_behind_the_api()
            deadline = time.monotonic() + 10
            while replica.lag <= 1 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert replica.lag > 1, "a paused replay shows as lag"
            listed = await client.simulate_get("/api/gateway/v1/risk-items", headers=partner)
            assert listed.json["data"]["total"] == 4, "a standby beyond READ_MAX_LAG is skipped for the primary"


def test_losing_the_primary_loses_and_doubles_nothing_and_fails_back(formation, stack, partner, capsys):
    def report(line: str) -> None:
        with capsys.disabled():
            print(f"\n[failover drill] {line}")

    started = time.monotonic()
    with stack.worker("--concurrency", "64") as worker:
        first_loss, first_primary = drill(formation, stack, partner, worker, report)
        report(f"first drill done at {time.monotonic() - started:.0f} s")
        archives_on_its_timeline(formation, first_primary)
        formation.up()  # the lost node comes back, rewinds and follows the new primary
        assert sorted(r["reportedstate"] for r in formation.monitor(
            "SELECT reportedstate FROM pgautofailover.node")) == ["primary", "secondary"]
        report(f"rejoined at {time.monotonic() - started:.0f} s")
        sweep_ran_after(formation, first_loss, first_primary)
        report(f"sweep seen at {time.monotonic() - started:.0f} s")
        second_loss, second_primary = drill(formation, stack, partner, worker, report)
        assert second_primary != first_primary, "the second failover went back to the first node"
        sweep_ran_after(formation, second_loss, second_primary)
    report(f"both failovers and their drains in {time.monotonic() - started:.0f} s")
