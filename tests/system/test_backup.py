"""The backup drill: continuous archiving and a point-in-time restore on pgBackRest, on a
throwaway cluster of its own (initdb on a free port under a folder of /tmp, run as postgres;
pgBackRest's configuration and repository in that folder), never the shared one.

Deploy; traffic through the real API, worker and sandbox (items, emissions, webhooks); `backup
up` (archiving, a restart announced on a line, a first full backup); more traffic; a
differential backup; emissions queued but not yet sent; the time T, and every table's rows at
T; the worker sends them (after T); the accident (one channel's risk items and their emissions
deleted); `backup restore` to T beside the live cluster. Then: every table of the copy equals
the rows at T; the API and the worker work on the copy, and the worker's resends issue nothing
twice (each insurer sees the same Idempotency-Key, no second policy; each partner the same
webhook-id); `backup recover-rows` brings the channel's rows back into the live database while
its API serves, equal to the copy's. `backup status` exits 1 once archiving breaks.

Marker `backup`: scripts/test.sh runs it in a pytest invocation of its own. It needs root or the
user postgres (initdb, pg_ctl and pgBackRest run as postgres). The figures (restore wall time,
database size, rows lost, policies issued twice) are printed and copied into docs/operations.md
"Backups and restore".
"""
from __future__ import annotations

import collections
import contextlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families
from psycopg.rows import dict_row

from app.backup import chown_owner, run_as_owner
from tests.conftest import ROOT, child_environ, free_port, running, unique, wait_for
from tests.fixtures.pipeline import Stack

pytestmark = [
    pytest.mark.backup,
    pytest.mark.needs_root,  # initdb, pg_ctl and pgBackRest run as postgres (runuser)
]

BIN = Path("/usr/lib/postgresql/15/bin")
APP_SCHEMAS = ("insurance", "postsales", "gateway", "integrations", "outbox", "dashboard", "webhooks", "sqitch")
ITEMS_PER_PHASE = 6  # per channel: 3 phases x 2 channels


class Cluster:
    """A PostgreSQL 15 cluster of its own: initdb in a folder of /tmp owned by postgres, pg_cron
    preloaded as `make run`'s cluster has it, the schema deployed by `python -m app migrate`."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="insurance-backup-drill-"))
        chown_owner(self.dir)
        self.port = free_port()
        self.data = self.dir / "data"
        self.admin_url = f"postgresql://postgres@127.0.0.1:{self.port}/insurance"
        self.app_url = f"postgresql://insurance_app@127.0.0.1:{self.port}/insurance"
        self.side: Path | None = None

    def env(self, **more: str) -> dict[str, str]:
        """The environment of every process of the drill: this cluster and its repository only."""
        env = child_environ(DATABASE_URL=self.app_url, ADMIN_DATABASE_URL=self.admin_url,
                            BACKUP_CONFIG=str(self.dir / "pgbackrest.conf"), BACKUP_REPO_PATH=str(self.dir / "repo"),
                            BACKUP_LOG_PATH=str(self.dir / "log"), BACKUP_STANZA=f"drill-{self.port}",
                            BACKUP_CIPHER_PASS="drill-" + "k" * 40, BACKUP_ARCHIVE_TIMEOUT="30", **more)
        env.pop("DATABASE_LISTEN_URL", None)
        return env

    def create(self) -> None:
        run_as_owner([str(BIN / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync",
                      "-E", "UTF8"])
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(f"port = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                       f"unix_socket_directories = '{self.dir}'\n"
                       "shared_preload_libraries = 'pg_cron'\ncron.database_name = 'postgres'\n"
                       "cron.use_background_workers = on\nmax_worker_processes = 16\n")
        run_as_owner([str(BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.dir / "postgres.log"), "-w",
                      "start"], starts_server=True)
        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.port}/postgres", autocommit=True) as conn:
            conn.execute("CREATE EXTENSION pg_cron")
            conn.execute("CREATE DATABASE insurance")
        done = subprocess.run([sys.executable, "-m", "app", "migrate"], check=False, env=self.env(), cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.port}/postgres", autocommit=True) as conn:
            # No minute job between the snapshot at T and the accident: the rows at T stay the rows at T.
            conn.execute("SELECT cron.unschedule(jobid) FROM cron.job")

    def stop(self, data: Path) -> None:
        if (data / "postmaster.pid").exists():
            subprocess.run(["runuser", "-u", "postgres", "--", str(BIN / "pg_ctl"), "-D", str(data), "stop",
                            "-m", "immediate"], check=False, capture_output=True, timeout=60)

    def remove(self) -> None:
        if self.side:
            self.stop(self.side)
        self.stop(self.data)
        shutil.rmtree(self.dir, ignore_errors=True)

    def admin(self, url: str | None = None) -> psycopg.Connection:
        return psycopg.connect(url or self.admin_url, autocommit=True, row_factory=dict_row)


def app_cli(env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *args], check=False, env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    made = Cluster()
    try:
        made.create()
        yield made
    finally:
        made.remove()


@contextlib.contextmanager
def api_on(env: dict[str, str]) -> Iterator[str]:
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    with running(["serve", "--port", str(port)], {**env, "PORT": str(port), "PUBLIC_BASE_URL": api},
                 f"{api}/healthz"):
        yield api


@pytest.fixture(scope="module")
def stack(cluster: Cluster) -> Iterator[Stack]:
    sandbox_port = free_port()
    sandbox = f"http://127.0.0.1:{sandbox_port}"
    env = cluster.env(CHAT_WEBHOOK_URL=f"{sandbox}/chat/webhook", WORKER_POLL_INTERVAL="0.2", LOG_LEVEL="warning",
                      INTEGRATION_RETRY_BASE_SECONDS="1", INTEGRATION_RETRY_CAP_SECONDS="2",
                      WEBHOOK_RETRY_BASE_SECONDS="1", WEBHOOK_RETRY_CAP_SECONDS="2", WORKER_LEASE_SECONDS="10")
    with running(["sandbox", "--port", str(sandbox_port)], env, f"{sandbox}/_sandbox/health"):
        done = app_cli(env, "sandbox", "configure", sandbox)
        assert done.returncode == 0, done.stderr
        with api_on(env) as api:
            yield Stack(sandbox, api, {**env, "PUBLIC_BASE_URL": api})


def make_partner(cluster: Cluster, stack: Stack, name: str) -> dict:
    """A channel made by `channels create` selling a PROVIDER_A package, its webhooks to a sandbox
    receiver: {id, apiKey, webhookSecret, package, hook}."""
    with cluster.admin() as conn:
        package = conn.execute("INSERT INTO insurance.packages (uid, name, sales_integration_slug) "
                               "VALUES (%s, 'Drill', 'PROVIDER_A') RETURNING id, uid", (unique("pkg"),)).fetchone()
        conn.execute("INSERT INTO insurance.package_variants (package_id, code, name) VALUES (%s, 'travel', 'T')",
                     (package["id"],))
    hook = f"{name}-{uuid.uuid4().hex[:8]}"
    done = app_cli(stack.env, "channels", "create", "--name", unique(name), "--package", package["uid"],
                   "--branch", "v1", "--branch", "integrations/v1", "--integration-payload",
                   orjson.dumps({"webhooks": [f"{stack.sandbox}/_sandbox/webhooks/{hook}"]}).decode())
    assert done.returncode == 0, done.stderr
    return {**orjson.loads(done.stdout), "package": package, "hook": hook}


def token(api: str, partner: dict) -> dict[str, str]:
    answer = httpx.get(f"{api}/api/gateway/v1/auth/authorize", headers={"x-api-key": partner["apiKey"]})
    assert answer.status_code == 200, answer.text
    return {"Authorization": f"Bearer {answer.json()['data']['access_token']}"}


def sell(api: str, partner: dict, count: int) -> list[int]:
    """`count` risk items with a holder, each by POST /api/gateway/v1/risk-items: a dispatch each."""
    headers, ids = token(api, partner), []
    with httpx.Client(timeout=30) as client:
        for _ in range(count):
            email = f"{uuid.uuid4().hex[:10]}@example.com"
            resp = client.post(f"{api}/api/gateway/v1/risk-items", headers=headers, json={
                "package_uid": partner["package"]["uid"], "policy_uid": unique("POL"), "variant": "travel",
                "insured_subject": {"name": "Ada Lovelace", "email": email},
                "beneficiaries": [{"name": "Ada Lovelace", "email": email, "isHolder": True, "share": 100}]})
            assert resp.status_code == 201, resp.text
            ids.append(resp.json()["data"]["id"])
    return ids


def drained(url: str, ids: list[int]) -> bool:
    """Every item's emission SUCCESS and nothing left in the outbox."""
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(
            """SELECT (SELECT count(*) FROM insurance.integration_emissions
                        WHERE risk_item_id = ANY(%s) AND status = 'SUCCESS') = cardinality(%s::bigint[])
                  AND NOT EXISTS (SELECT FROM outbox.http_requests WHERE delivered_at IS NULL)""",
            (ids, ids)).fetchone()[0]


def tables(conn: psycopg.Connection) -> list[str]:
    return [r["t"] for r in conn.execute(
        """SELECT format('%%I.%%I', n.nspname, c.relname) AS t FROM pg_class c
             JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind IN ('r', 'p') AND n.nspname = ANY(%s) ORDER BY 1""", (list(APP_SCHEMAS),))]


def snapshot(url: str) -> dict[str, collections.Counter]:
    """Every row of every table of the app's schemas (as JSON text), one consistent snapshot."""
    with psycopg.connect(url, row_factory=dict_row) as conn:
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        return {t: collections.Counter(r["j"] for r in conn.execute(f"SELECT to_jsonb(x)::text AS j FROM {t} x"))
                for t in tables(conn)}


def issued(stack: Stack) -> collections.Counter:
    """How many policies the insurer issued under each Idempotency-Key."""
    return collections.Counter(r["idempotencyKey"] for r in stack.requests("PROVIDER_A") if r.get("issued"))


def webhook_ids(stack: Stack, partner: dict) -> list[str]:
    got = httpx.get(f"{stack.sandbox}/_sandbox/webhooks", params={"name": partner["hook"]}).json()["webhooks"]
    return [w["headers"]["webhook-id"] for w in got if w.get("status", 204) < 300]


def archived_through(cluster: Cluster, segment: str) -> bool:
    with cluster.admin() as conn:
        row = conn.execute("SELECT last_archived_wal FROM pg_stat_archiver").fetchone()
    return bool(row["last_archived_wal"]) and row["last_archived_wal"] >= segment


def test_point_in_time_restore_brings_back_every_row_and_issues_nothing_twice(cluster, stack, capsys):
    def report(line: str) -> None:
        with capsys.disabled():
            print(f"\n[backup drill] {line}")

    started = time.monotonic()
    lost, kept = make_partner(cluster, stack, "lost"), make_partner(cluster, stack, "kept")
    items: list[int] = []
    with stack.worker():
        items += sell(stack.api, lost, ITEMS_PER_PHASE) + sell(stack.api, kept, ITEMS_PER_PHASE)
        wait_for(lambda: drained(cluster.admin_url, items), timeout=60, what="the first traffic delivered")

    # Archiving on and a first full backup: one restart, announced on a line of its own before it.
    env = stack.env
    done = app_cli(env, "backup", "up")
    assert done.returncode == 0, done.stderr
    announced = [line for line in done.stderr.splitlines() if "restarting PostgreSQL" in line]
    assert announced and f"port {cluster.port}" in announced[0], done.stderr
    assert orjson.loads(done.stdout)["backups"][0]["type"] == "full"
    again = app_cli(env, "backup", "up")
    assert again.returncode == 0 and "restarting" not in again.stderr, "a second `backup up` changes nothing"
    assert len(orjson.loads(again.stdout)["backups"]) == 1, "and takes no second backup"
    report(f"backup up (restart, full backup) twice in {time.monotonic() - started:.0f} s")

    with stack.worker():
        items += sell(stack.api, lost, ITEMS_PER_PHASE) + sell(stack.api, kept, ITEMS_PER_PHASE)
        wait_for(lambda: drained(cluster.admin_url, items), timeout=60, what="the second traffic delivered")
    diff = app_cli(env, "backup", "now", "--type", "diff")
    assert diff.returncode == 0 and orjson.loads(diff.stdout)["type"] == "diff", diff.stderr

    # Queued at T, sent after it: the restored copy holds them pending and its worker resends them.
    pending = sell(stack.api, lost, ITEMS_PER_PHASE) + sell(stack.api, kept, ITEMS_PER_PHASE)
    at_t = snapshot(cluster.admin_url)
    with cluster.admin() as conn:
        target = conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]
    time.sleep(1.1)
    with stack.worker():
        wait_for(lambda: drained(cluster.admin_url, items + pending), timeout=60, what="the queued emissions sent")
    sent_before, hooks_before = issued(stack), {p["id"]: webhook_ids(stack, p) for p in (lost, kept)}
    assert sum(sent_before.values()) == len(items + pending) and max(sent_before.values()) == 1

    # The accident, then a WAL switch in a transaction of its own: a commit after T is archived.
    with cluster.admin() as conn:
        with conn.transaction():
            conn.execute("DELETE FROM insurance.integration_emissions e USING insurance.risk_items i "
                         "WHERE e.risk_item_id = i.id AND i.channel_id = %s", (lost["id"],))
            gone = conn.execute("DELETE FROM insurance.risk_items WHERE channel_id = %s", (lost["id"],)).rowcount
        segment = conn.execute("SELECT pg_walfile_name(pg_switch_wal()) AS s").fetchone()["s"]
    assert gone == 3 * ITEMS_PER_PHASE
    wait_for(lambda: archived_through(cluster, segment), timeout=60, what="the accident's WAL archived")

    side_port = free_port()
    cluster.side = cluster.dir / "side"
    restore_started = time.monotonic()
    restored = app_cli(env, "backup", "restore", "--time", target.isoformat(), "--to", str(cluster.side),
                       "--port", str(side_port))
    restore_seconds = time.monotonic() - restore_started
    assert restored.returncode == 0, restored.stderr
    side_admin = restored.stdout.strip().splitlines()[-1]
    assert side_admin == f"postgresql://postgres@127.0.0.1:{side_port}/insurance"
    with cluster.admin(side_admin) as conn:
        size = conn.execute("SELECT pg_database_size('insurance') AS s").fetchone()["s"]
        assert conn.execute("SHOW archive_mode").fetchone()["archive_mode"] == "off", \
            "the copy never archives into the live stanza"

    # Every table, row by row, as it was at T.
    at_copy = snapshot(side_admin)
    assert at_copy.keys() == at_t.keys()
    differing = {t: (sum((at_t[t] - at_copy[t]).values()), sum((at_copy[t] - at_t[t]).values()))
                 for t in at_t if at_t[t] != at_copy[t]}
    assert not differing, f"tables that differ from T (rows missing, rows extra): {differing}"
    rows_at_t = sum(sum(c.values()) for c in at_t.values())
    report(f"restore to T: {restore_seconds:.1f} s wall for a database of {size / 1e6:.1f} MB; {rows_at_t} rows "
           f"at T in {len(at_t)} tables, 0 lost. {restored.stderr.strip().splitlines()[-1]}")

    # The app on the copy: reads, writes, and the worker's resends of what was pending at T.
    side_env = {**env, "DATABASE_URL": side_admin.replace("postgres@", "insurance_app@"),
                "ADMIN_DATABASE_URL": side_admin}
    with api_on(side_env) as side_api:
        assert httpx.get(f"{side_api}/readyz").status_code == 200
        listed = httpx.get(f"{side_api}/api/gateway/v1/risk-items", headers=token(side_api, lost),
                           params={"limit": 100})
        assert listed.status_code == 200 and listed.json()["data"]["total"] == 3 * ITEMS_PER_PHASE
        side_stack = Stack(stack.sandbox, side_api, {**side_env, "PUBLIC_BASE_URL": side_api})
        with side_stack.worker():
            wait_for(lambda: drained(side_admin, items + pending), timeout=60, what="the copy's outbox drained")
    resent = issued(stack)
    twice = sum(n - 1 for n in resent.values() if n > 1)
    asked_again = sum(1 for r in stack.requests("PROVIDER_A") if r.get("replayed"))
    hooks_after = {p["id"]: webhook_ids(stack, p) for p in (lost, kept)}
    new_ids = {k: set(hooks_after[k]) - set(hooks_before[k]) for k in hooks_after}
    resent_hooks = sum(len(hooks_after[k]) - len(hooks_before[k]) for k in hooks_after)
    report(f"the copy's worker: {asked_again} insurer calls replayed, {twice} policies issued twice; "
           f"{resent_hooks} webhooks resent, {sum(map(len, new_ids.values()))} under a new webhook-id")
    assert asked_again >= len(pending), "the pending emissions were sent again, with their Idempotency-Key"
    assert twice == 0, {k: n for k, n in resent.items() if n > 1}
    assert resent_hooks >= len(pending), "the pending emissions' events were sent again"
    assert not any(new_ids.values()), f"a partner saw a resent event under a new webhook-id: {new_ids}"

    # The lost channel's rows back into the live database, while its API serves.
    with cluster.admin() as conn:
        before = conn.execute("SELECT count FROM insurance.channel_item_counts WHERE channel_id = %s",
                              (lost["id"],)).fetchone()["count"]
    assert before == 0
    answers: list[int] = []
    stop = threading.Event()

    def read_live() -> None:
        headers = token(stack.api, kept)
        with httpx.Client(timeout=10) as client:
            while not stop.is_set():
                answers.append(client.get(f"{stack.api}/api/gateway/v1/risk-items", headers=headers).status_code)
                stop.wait(0.05)

    reader = threading.Thread(target=read_live, daemon=True)
    reader.start()
    try:
        recovered = app_cli(env, "backup", "recover-rows", "--from", side_admin, "--channel", lost["id"])
    finally:
        stop.set()
        reader.join(10)
    assert recovered.returncode == 0, recovered.stderr
    counts = orjson.loads(recovered.stdout)
    assert counts["rows"]["insurance.risk_items"] == 3 * ITEMS_PER_PHASE
    assert answers and set(answers) == {200}, collections.Counter(answers)
    channel_rows = """SELECT to_jsonb(x)::text AS j FROM {} x WHERE risk_item_id IN
                      (SELECT id FROM insurance.risk_items WHERE channel_id = %s)"""
    for table in ("insurance.beneficiaries", "insurance.integration_emissions", "insurance.authorized_claimants",
                  "insurance.risk_item_documents"):
        with cluster.admin() as live, cluster.admin(side_admin) as side:
            mine = sorted(r["j"] for r in live.execute(channel_rows.format(table), (lost["id"],)))
            theirs = sorted(r["j"] for r in side.execute(channel_rows.format(table), (lost["id"],)))
        assert mine == theirs and mine, table
    with cluster.admin() as live, cluster.admin(side_admin) as side:
        query = "SELECT to_jsonb(x)::text AS j FROM insurance.risk_items x WHERE channel_id = %s ORDER BY id"
        assert [r["j"] for r in live.execute(query, (lost["id"],))] == \
            [r["j"] for r in side.execute(query, (lost["id"],))]
        assert live.execute("SELECT count FROM insurance.channel_item_counts WHERE channel_id = %s",
                            (lost["id"],)).fetchone()["count"] == 3 * ITEMS_PER_PHASE
    listed = httpx.get(f"{stack.api}/api/gateway/v1/risk-items", headers=token(stack.api, lost), params={"limit": 100})
    assert listed.json()["data"]["total"] == 3 * ITEMS_PER_PHASE, "the partner sees its items again"
    assert max(issued(stack).values()) == 1, "bringing the rows back sent nothing to the insurer"
    report(f"recover-rows: {counts['rows']} in {counts['seconds']} s, {len(answers)} live reads meanwhile, all 200; "
           f"the drill took {time.monotonic() - started:.0f} s")


def failing(cluster: Cluster) -> bool:
    with cluster.admin() as conn:
        return conn.execute("SELECT last_failed_time > coalesce(last_archived_time, '-infinity') AS f "
                            "FROM pg_stat_archiver").fetchone()["f"] or False


def test_status_exits_non_zero_when_archiving_fails(cluster, stack):
    """Runs after the drill (the repository has backups): a repository that refuses WAL."""
    env = stack.env
    if not (cluster.dir / "repo" / "backup").exists():
        assert app_cli(env, "backup", "up").returncode == 0
    healthy = app_cli(env, "backup", "status")
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert orjson.loads(healthy.stdout)["healthy"] is True
    archive = cluster.dir / "repo" / "archive"
    archive.chmod(0o000)  # pgBackRest runs as postgres: it can no longer write the archive
    try:
        with cluster.admin() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS public.archive_probe (n int)")
            conn.execute("INSERT INTO public.archive_probe VALUES (1)")
            conn.execute("SELECT pg_switch_wal()")
        wait_for(lambda: failing(cluster), timeout=60, what="archiving to fail")
        broken = app_cli(env, "backup", "status")
        assert broken.returncode == 1, broken.stdout
        assert any("archiving failed" in p for p in orjson.loads(broken.stdout)["problems"])
        # /metrics says so too, as the alert InsuranceWalArchiveFailing reads it.
        gauges = {f.name: f.samples[0].value for f in text_string_to_metric_families(
            httpx.get(f"{stack.api}/metrics").text) if f.name.startswith("insurance_wal_") and f.samples}
        assert gauges["insurance_wal_archiving_enabled"] == 1
        assert gauges["insurance_wal_last_archive_failure_timestamp_seconds"] > \
            gauges["insurance_wal_last_archived_timestamp_seconds"]
        assert gauges["insurance_wal_archive_failures"] >= 1
    finally:
        archive.chmod(0o750)
    with cluster.admin() as conn:  # a new segment wakes the archiver, which retries the failed one first
        conn.execute("INSERT INTO public.archive_probe VALUES (2)")
        conn.execute("SELECT pg_switch_wal()")
    wait_for(lambda: not failing(cluster), timeout=90, what="archiving to recover")
    assert app_cli(env, "backup", "status").returncode == 0
    old = app_cli({**env, "BACKUP_MAX_AGE": "1s"}, "backup", "status")
    assert old.returncode == 1 and any("newest backup" in p for p in orjson.loads(old.stdout)["problems"])


def test_what_could_harm_the_live_cluster_is_refused(cluster, stack):
    """A restore over the live data directory or into a folder with files, on a port in use, a
    time that is not one, rows "recovered" from the live database itself: refused, one line,
    nothing changed."""
    env = stack.env
    when = "2026-11-29T10:41:07Z"
    (cluster.dir / "full").mkdir(exist_ok=True)
    (cluster.dir / "full" / "keep.txt").write_text("someone's file")
    for args, code, says in (
            (["--to", str(cluster.data), "--port", str(free_port())], 1, "live cluster's data directory"),
            (["--to", str(cluster.dir), "--port", str(free_port())], 1, "live cluster's data directory"),
            (["--to", str(cluster.dir / "full"), "--port", str(free_port())], 1, "not empty"),
            (["--to", str(cluster.dir / "new"), "--port", str(cluster.port)], 1, f"port {cluster.port} is taken")):
        done = app_cli(env, "backup", "restore", "--time", when, *args)
        assert (done.returncode, done.stdout) == (code, ""), done.stderr
        assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (cluster.dir / "new").exists()
    bad_time = app_cli(env, "backup", "restore", "--time", "yesterday", "--to", str(cluster.dir / "new"),
                       "--port", "5999")
    assert bad_time.returncode == 2 and "ISO 8601" in bad_time.stderr
    same = app_cli(env, "backup", "recover-rows", "--from", cluster.admin_url, "--channel", str(uuid.uuid4()))
    assert same.returncode == 1 and "side copy" in same.stderr, same.stderr
