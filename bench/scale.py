"""Cost as the data grows: each operation on an empty database and on a full one, side by side.

    .venv/bin/python -m bench.scale [--scale 1.0] [--rounds 5] [--reps 20] [--keep]

Two throwaway databases with the same schema (sqitch) and the same small fixture (a channel
with a few hundred risk items, a holder, a few thousand outbox rows and emissions): "empty",
and "full", which holds what a year of production leaves behind, filled set-based
(INSERT ... SELECT generate_series, a few minutes at most):

  - `--scale` x 1,000,000 outbox rows, half of them pending (a backlog after an outage), half
    delivered;
  - `--scale` x 1,000,000 risk items in the fixture's channel, each with a holder beneficiary;
  - `--scale` x 1,000,000 emissions of those items.

Then, in alternating rounds (empty, full, full, empty, ...: the machine's load cancels out),
each operation is called as the app calls it (the role switch and the claims in the call's own
statement, app/db.py), inside a transaction that is rolled back, so that every repetition finds
the same rows. Prints the median and p90 of each operation on both databases and their ratio;
the goal is at most 2x (docs/performance.md, "Cost that stays flat as the tables fill").

`--scale 0.1` is a quick run (about a tenth of the fill time).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import orjson
import psycopg

ROOT = Path(__file__).resolve().parent.parent
PG = os.environ.get("BENCH_PG", "postgres@127.0.0.1:5432")
SERVICE, CHANNEL, HOLDER, DASHBOARD = ("insurance_service", "insurance_channel", "insurance_holder",
                                       "insurance_dashboard")
CHANNEL_ID = "5ca1e000-0000-4000-8000-000000000001"
HOLDER_EMAIL = "holder@scale.example"
SMALL_ITEMS = 300        # the fixture's items in the channel (both databases)
SMALL_ROWS = 2000        # the fixture's outbox rows and emissions (both databases)


def log(message: str) -> None:
    print(f"[scale] {message}", file=sys.stderr, flush=True)


def psql(db: str, sql: str) -> None:
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", f"postgresql://{PG}/{db}", "-c", sql],
                   check=True, stdout=subprocess.DEVNULL)


# -- the operations ---------------------------------------------------------------------------
@dataclass
class Op:
    """One call of the app: `function(args)` as `role` with `claims`; `before` statements run
    first in the same (rolled back) transaction, untimed."""
    name: str
    role: str
    claims: dict
    function: str
    args: tuple
    before: tuple[str, ...] = ()

    @property
    def sql(self) -> str:
        params = ", ".join(["%s"] * len(self.args))
        return (f"SELECT {self.function}({params})::text FROM (SELECT set_config('role', %s, true), "
                f"set_config('request.jwt.claims', %s, true) OFFSET 0) AS _auth")


def operations(ids: dict) -> list[Op]:
    """What the routes and the worker call (see app/): one Op each, against the fixture's rows
    (`ids`), which exist in both databases."""
    channel = {"sub": CHANNEL_ID, "branch": "v1", "gen": str(ids["gen"])}
    channel_v2 = {**channel, "branch": "v2"}
    holder = {"email": HOLDER_EMAIL}
    dashboard = {"sub": str(ids["user"]), "email": "ops@scale.example", "role": "dashboard"}
    outcome = orjson.dumps([{"riskItemId": ids["item"], "provider": "PROVIDER_A", "event": "SCALE",
                             "outcome": {"status": "SUCCESS", "externalId": "X-1"}}]).decode()
    spec = orjson.dumps([{"riskItemId": ids["item"], "provider": "PROVIDER_A", "event": "SCALE"}]).decode()
    return [
        Op("outbox claim (25)", SERVICE, {}, "outbox.claim_batch", ("scale", 25, 60)),
        Op("emission begin (1)", SERVICE, {}, "integrations.begin_batch", (spec, "scale", 60)),
        Op("emission record (1)", SERVICE, {}, "integrations.record_batch", (outcome, "{}"),
           before=(f"SELECT integrations.begin_batch('{spec}', 'scale', 60) FROM (SELECT set_config('role', "
                   f"'{SERVICE}', true) OFFSET 0) _a",)),
        Op("gateway v1 list(10)", CHANNEL, channel, "gateway.list_risk_items", (0, 0, 9, None)),
        Op("gateway v1 list(1) by policy", CHANNEL, channel, "gateway.list_risk_items", (0, 0, 0, ids["policy"])),
        Op("gateway v2 page(10), middle", CHANNEL, channel_v2, "gateway.page_risk_items", (0, 10, ids["item"], None)),
        Op("gateway get item", CHANNEL, channel, "gateway.get_risk_item", (0, None, ids["uid"])),
        Op("holder list", HOLDER, holder, "postsales.my_risk_items", ()),
        Op("tRPC emissions list(50)", DASHBOARD, dashboard, "dashboard.list_emissions",
           (None, None, None, None, None, None, 50)),
        Op("tRPC emissions FAILED(50)", DASHBOARD, dashboard, "dashboard.list_emissions",
           (["FAILED"], None, None, None, None, None, 50)),
        Op("tRPC byRiskItem", DASHBOARD, dashboard, "dashboard.risk_item_emissions", (ids["item"], None)),
        Op("back-office outbox(50)", DASHBOARD, dashboard, "dashboard.list_outbox", (False, None, 50)),
        Op("back-office audit(50)", DASHBOARD, dashboard, "dashboard.list_audit", (None, 50)),
        Op("metrics scrape", SERVICE, {}, "insurance.read_metrics", ()),
    ]


def time_op(conn: psycopg.Connection, op: Op, reps: int) -> list[float]:
    """Milliseconds of each of `reps` calls, each in its own transaction, rolled back."""
    times = []
    sql = op.sql
    args = (*op.args, op.role, orjson.dumps(op.claims).decode())
    for _ in range(reps):
        with conn.transaction(force_rollback=True):
            for statement in op.before:
                conn.execute(statement)
            t0 = time.perf_counter()
            conn.execute(sql, args, prepare=True).fetchone()
            times.append((time.perf_counter() - t0) * 1000)
    return times


# -- the databases --------------------------------------------------------------------------
FIXTURE = f"""
INSERT INTO insurance.packages (uid, name) VALUES ('scale', 'Scale');
INSERT INTO insurance.package_variants (package_id, code, name)
  SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid = 'scale';
INSERT INTO insurance.channels (id, name, branches, api_key_hash)
  VALUES ('{CHANNEL_ID}', 'Scale partner', '{{v1,v2}}', sha256('scale-key'));
INSERT INTO insurance.channel_packages (channel_id, package_id)
  SELECT '{CHANNEL_ID}', id FROM insurance.packages WHERE uid = 'scale';
INSERT INTO insurance.dashboard_users (email, password_hash) VALUES ('ops@scale.example', '$argon2id$scale');
-- The channel's small book: {SMALL_ITEMS} items, the holder's five among them.
INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant, insured_subject)
  SELECT p.id, '{CHANNEL_ID}', 'small-' || n, 'travel', '{{"name": "Ada", "email": "ada@example.com"}}'
    FROM insurance.packages p, generate_series(1, {SMALL_ITEMS}) n WHERE p.uid = 'scale';
INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
  SELECT id, 'Ada', CASE WHEN id % 60 = 0 THEN '{HOLDER_EMAIL}' ELSE 'small' || id || '@scale.example' END, true, 100
    FROM insurance.risk_items;
INSERT INTO insurance.integration_emissions (risk_item_id, provider, event, status, external_id, attempts,
                                             next_retry_at)
  SELECT r.id, 'PROVIDER_A', 'E' || n, CASE WHEN n % 10 = 0 THEN 'FAILED' ELSE 'SUCCESS' END, 'X' || n, 1,
         CASE WHEN n % 10 = 0 THEN now() + interval '1 hour' END
    FROM generate_series(1, {SMALL_ROWS}) n
    JOIN insurance.risk_items r ON r.policy_uid = 'small-' || (1 + n % {SMALL_ITEMS});
INSERT INTO outbox.http_requests (url, body, deliver_after, delivered_at, last_status)
  SELECT 'http://127.0.0.1:9/scale', '{{"n": 1}}', now() - interval '1 minute',
         CASE WHEN n % 2 = 0 THEN now() END, CASE WHEN n % 2 = 0 THEN 200 END
    FROM generate_series(1, {SMALL_ROWS}) n;
"""


def fill(n: int) -> list[tuple[str, str]]:
    """The year of production, as (what, statement): set-based inserts with every trigger on,
    except the read model's: a year of writes builds each document at its item's write, and one
    statement of a million items and then one of their million beneficiaries would lock and
    rebuild every document twice (more than ten minutes here). Those triggers are off for the
    items and beneficiaries and the documents are written once at the end, as the
    risk_item_documents change's backfill does (the way to bulk-load, docs/operations.md)."""
    half = n // 2
    documents = ("risk_items_documents_insert", "risk_items_documents_update", "beneficiaries_documents_insert")
    return [
        ("outbox, delivered", f"""
INSERT INTO outbox.http_requests (url, body, deliver_after, created_at, delivered_at, last_status, attempts)
  SELECT 'http://127.0.0.1:9/year', '{{"n": 1}}', t, t, t + interval '1 second', 200, 1
    FROM (SELECT now() - interval '400 days' + n * interval '10 seconds' AS t
            FROM generate_series(1, {n - half}) n) s"""),
        ("outbox, pending (the backlog)", f"""
INSERT INTO outbox.http_requests (url, body, deliver_after, created_at)
  SELECT 'http://127.0.0.1:9/backlog', '{{"n": 1}}', now() - interval '2 days' + n * interval '100 ms',
         now() - interval '2 days'
    FROM generate_series(1, {half}) n"""),
        ("read-model triggers off", "; ".join(
            f"ALTER TABLE insurance.{t.split('_documents')[0]} DISABLE TRIGGER {t}" for t in documents)),
        ("risk items in one channel", f"""
INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant, insured_subject)
  SELECT p.id, '{CHANNEL_ID}', 'year-' || n, 'travel', '{{"name": "Bea", "email": "bea@example.com"}}'
    FROM insurance.packages p, generate_series(1, {n}) n WHERE p.uid = 'scale'"""),
        ("beneficiaries (holders)", """
INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
  SELECT id, 'Bea', 'y' || id || '@scale.example', true, 100
    FROM insurance.risk_items WHERE policy_uid LIKE 'year-%'"""),
        ("their documents, and the triggers back on", "; ".join(
            [f"ALTER TABLE insurance.{t.split('_documents')[0]} ENABLE TRIGGER {t}" for t in documents]
            + ["""INSERT INTO insurance.risk_item_documents (risk_item_id, channel_id, document)
  SELECT c.risk_item_id, c.channel_id, c.document FROM insurance.computed_risk_item_documents c
   WHERE NOT EXISTS (SELECT FROM insurance.risk_item_documents d WHERE d.risk_item_id = c.risk_item_id)"""])),
        ("emissions", """
INSERT INTO insurance.integration_emissions (risk_item_id, provider, event, status, external_id, attempts,
                                             next_retry_at)
  SELECT id, 'PROVIDER_A', 'POLICY_CREATED', CASE WHEN id % 20 = 0 THEN 'FAILED' ELSE 'SUCCESS' END, 'Y' || id, 1,
         CASE WHEN id % 20 = 0 THEN now() + interval '1 day' END
    FROM insurance.risk_items WHERE policy_uid LIKE 'year-%'"""),
    ]


def fixture_ids(conn: psycopg.Connection) -> dict:
    """The fixture rows the operations address (the same in both databases)."""
    item, uid, policy = conn.execute(
        "SELECT id, uid, policy_uid FROM insurance.risk_items WHERE policy_uid = %s",
        (f"small-{SMALL_ITEMS // 2}",)).fetchone()
    gen = conn.execute("SELECT key_generation FROM insurance.channels WHERE id = %s", (CHANNEL_ID,)).fetchone()[0]
    user = conn.execute("SELECT id FROM insurance.dashboard_users WHERE email = 'ops@scale.example'").fetchone()[0]
    return {"item": item, "uid": str(uid), "policy": policy, "gen": gen, "user": user}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="x 1,000,000 rows of each kind (default 1)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--reps", type=int, default=15, help="calls of each operation per round and database")
    parser.add_argument("--keep", action="store_true", help="keep both databases (their names are printed)")
    parser.add_argument("--only", default="", help="comma-separated substrings: time only these operations")
    args = parser.parse_args()

    tag = f"{os.getpid()}_{uuid.uuid4().hex[:6]}"
    empty, full = f"insurance_scale_empty_{tag}", f"insurance_scale_full_{tag}"
    n = int(args.scale * 1_000_000)
    try:
        t0 = time.perf_counter()
        psql("postgres", f'CREATE DATABASE "{empty}"')
        subprocess.run(["sqitch", "--chdir", str(ROOT), "deploy", f"db:pg://{PG}/{empty}"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={**os.environ, "SQITCH_FULLNAME": "bench", "SQITCH_EMAIL": "bench@insurance.invalid"})
        with psycopg.connect(f"postgresql://{PG}/{empty}", autocommit=True) as conn:
            conn.execute(FIXTURE)
            conn.execute("VACUUM ANALYZE")
        psql("postgres", f'CREATE DATABASE "{full}" TEMPLATE "{empty}"')
        log(f"schema and fixture in {time.perf_counter() - t0:.0f} s; filling {full} with {n:,} rows of each kind")
        with psycopg.connect(f"postgresql://{PG}/{full}", autocommit=True) as conn:
            for what, statement in fill(n):
                t1 = time.perf_counter()
                conn.execute(statement)
                log(f"  {what}: {time.perf_counter() - t1:.0f} s")
            t1 = time.perf_counter()
            conn.execute("VACUUM ANALYZE")  # what autovacuum does to a table that grew
            log(f"  vacuum analyze: {time.perf_counter() - t1:.0f} s")
        log(f"filled in {time.perf_counter() - t0:.0f} s")

        conns = {name: psycopg.connect(f"postgresql://{PG}/{db}") for name, db in (("empty", empty), ("full", full))}
        ids = fixture_ids(conns["empty"])
        assert ids == fixture_ids(conns["full"]), "the fixture differs between the databases"
        ops = [op for op in operations(ids)
               if not args.only or any(s.strip() in op.name for s in args.only.split(","))]
        times: dict[tuple[str, str], list[float]] = {(op.name, db): [] for op in ops for db in conns}
        for op in ops:  # warm up: plans cached, pages in memory, on both sides
            for db, conn in conns.items():
                time_op(conn, op, 3)
        for r in range(args.rounds):
            order = ("empty", "full") if r % 2 == 0 else ("full", "empty")
            for op in ops:
                for db in order:
                    times[op.name, db] += time_op(conns[db], op, args.reps)
        for conn in conns.values():
            conn.close()

        print(f"\ncost as the data grows: {n:,} outbox rows (half pending), risk items in one channel and "
              f"emissions; {args.rounds} alternating rounds x {args.reps} calls; milliseconds per call")
        print(f"{'operation':<32} {'empty p50':>9} {'p90':>7} {'full p50':>9} {'p90':>7} {'full/empty':>10}")
        worst = 0.0
        missed = []
        for op in ops:
            e, f = times[op.name, "empty"], times[op.name, "full"]
            pe, pf = statistics.median(e), statistics.median(f)
            ratio = pf / pe
            worst = max(worst, ratio)
            if ratio > 2:
                missed.append(op.name)
            print(f"{op.name:<32} {pe:>9.2f} {_p90(e):>7.2f} {pf:>9.2f} {_p90(f):>7.2f} {ratio:>9.2f}x"
                  f"{'  > 2x' if ratio > 2 else ''}")
        print(f"{'goal met   ' if not missed else 'GOAL MISSED'}  every operation within 2x of its empty-database "
              f"time (worst {worst:.2f}x{'; over: ' + ', '.join(missed) if missed else ''})")
        from bench.lib import record
        record("scale", {f"{op.name} empty p50 ms": statistics.median(times[op.name, "empty"]) for op in ops},
               **{"worst full/empty": worst},
               **{f"{op.name} full/empty": statistics.median(times[op.name, "full"]) / statistics.median(times[op.name, "empty"])
                  for op in ops})
        if args.keep:
            print(f"kept: {empty} {full}")
        return 0 if not missed else 1
    finally:
        if not args.keep:
            for db in (empty, full):
                subprocess.run(["psql", "-X", "-q", f"postgresql://{PG}/postgres", "-c",
                                f"SELECT cron.unschedule(jobid) FROM cron.job WHERE database = '{db}'"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                subprocess.run(["psql", "-X", "-q", f"postgresql://{PG}/postgres", "-c",
                                f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)'], stdout=subprocess.DEVNULL)


def _p90(values: list[float]) -> float:
    return sorted(values)[int(0.9 * (len(values) - 1))]


if __name__ == "__main__":
    sys.exit(main())
