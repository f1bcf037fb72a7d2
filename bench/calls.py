"""PostgreSQL's CPU per call of the reads, as the app sends them, for two builds side by side.

    .venv/bin/python -m bench.calls [--before <commit>] [--calls 4000] [--rounds 4]

Deploys two databases: one from a commit (`--before`, default HEAD; its tree exported with
`git archive`, no worktree) and one from this tree as it is, each seeded alike (20,000 risk items
of 10,000 holders, a holder with 3 items, an item with 3 emissions and a partner webhook, a
dashboard session). Then, alternating the two databases round by round, one insurance_app
connection per database runs each statement `--calls` times, each call its own transaction, as
app/db.py sends it (the role switch and the claims in the call's statement, prepared), and the
backend's CPU time (/proc/PID/schedstat, in nanoseconds) gives microseconds per call. The answers of the two
builds are compared byte for byte. On a shared machine CPU per call moves far less than a rate.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import statistics
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg

from bench.lib import PGHOST, PGPORT, ROOT, log

HOLDER = "bench.holder@example.com"
SESSION_TOKEN = "bench-session-token"
STATEMENTS = {
    # bench/bare_app.py's one indexed SELECT, the yardstick
    "bare SELECT": ("SELECT id, uid::text, policy_uid, status, variant FROM insurance.risk_items WHERE id = %(id)s",
                    None),
    # GET /api/postsales/v1/me/risk-items
    "holder my_risk_items": (
        ("SELECT postsales.my_risk_items() FROM (SELECT set_config('role', %(role)s, true), "
         "set_config('request.jwt.claims', %(claims)s, true) OFFSET 0) AS _auth"), "insurance_holder"),
    # tRPC integrationEmissions.byRiskItem
    "tRPC byRiskItem": (
        ("SELECT dashboard.risk_item_emissions(%(item)s, NULL) FROM (SELECT set_config('role', %(role)s, true), "
         "set_config('request.jwt.claims', dashboard.session_claims_or_deny(%(session)s), true) AS claims "
         "OFFSET 0) AS _auth"), "insurance_dashboard"),
    # the same for an item sold through a partner channel
    "tRPC byRiskItem, channel item": (
        ("SELECT dashboard.risk_item_emissions(%(channel_item)s, NULL) FROM (SELECT set_config('role', %(role)s, true), "
         "set_config('request.jwt.claims', dashboard.session_claims_or_deny(%(session)s), true) AS claims "
         "OFFSET 0) AS _auth"), "insurance_dashboard"),
}


@contextlib.contextmanager
def commit_tree(commit: str) -> Iterator[Path]:
    """The files of `commit` (git archive, no worktree) in a temporary folder while the block runs."""
    with tempfile.TemporaryDirectory(prefix="bench-commit-") as folder:
        archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(folder, filter="data")
        yield Path(folder)


def drop(dbs) -> None:
    """Drop the bench's databases, their pg_cron jobs first (the deploy scheduled them)."""
    with psycopg.connect(f"postgresql://postgres@{PGHOST}:{PGPORT}/postgres", autocommit=True) as conn:
        for db in dbs:
            conn.execute("SELECT cron.unschedule(jobid) FROM cron.job WHERE database = %s", (db,))
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


def deploy(tree: Path, db: str) -> str:
    url = f"postgresql://postgres@{PGHOST}:{PGPORT}/{db}"
    with psycopg.connect(f"postgresql://postgres@{PGHOST}:{PGPORT}/postgres", autocommit=True) as conn:
        conn.execute("SELECT cron.unschedule(jobid) FROM cron.job WHERE database = %s", (db,))
        conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{db}"')
    subprocess.run(["sqitch", "--chdir", str(tree), "deploy", f"db:pg://postgres@{PGHOST}:{PGPORT}/{db}"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={**os.environ, "SQITCH_FULLNAME": "bench", "SQITCH_EMAIL": "bench@insurance.invalid"})
    return url


def seed(url: str) -> dict:
    with psycopg.connect(url, autocommit=True) as conn:
        package = conn.execute("""INSERT INTO insurance.packages (uid, name) VALUES ('bench-calls', 'Bench travel')
                                  RETURNING id""").fetchone()[0]
        conn.execute("""INSERT INTO insurance.package_variants (package_id, code, name, coverages, premium)
                        VALUES (%s, 'travel', 'Travel', '[{"code": "BASIC", "limit": 1000}]', 19.9)""", (package,))
        conn.execute("""
            WITH items AS (
              INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject)
              SELECT %s, 'bench-' || n, 'travel', jsonb_build_object('name', 'Holder ' || n, 'phone', '+34 600 ' || n)
                FROM generate_series(1, 20000) n RETURNING id, policy_uid)
            INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
            SELECT id, 'Holder', 'holder' || (split_part(policy_uid, '-', 2)::int %% 10000) || '@example.com', true, 100
              FROM items""", (package,))
        conn.execute("""
            WITH items AS (
              INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject)
              SELECT %s, 'bench-holder-' || n, 'travel',
                     '{"name": "Bench Holder", "phone": "+34 600 000 000", "email": "bench.holder@example.com"}'
                FROM generate_series(1, 3) n RETURNING id)
            INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
            SELECT id, 'Bench Holder', %s, true, 100 FROM items""", (package, HOLDER))
        channel = conn.execute(
            "SELECT admin.create_channel('bench', 'bench-calls', '{v1,integrations/v2}', %s, '{}', %s::jsonb, "
            "'{bench-calls}')", (hashlib.sha256(b"ik_bench-calls").digest(),
                                 '{"webhooks": ["http://127.0.0.1:9/hook"]}')).fetchone()[0]["id"]
        # BENCH-CALLS-1 as bench/trpc.py's item (no channel); BENCH-CALLS-2 sold through a partner channel.
        items = [conn.execute("""INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant)
                                 VALUES (%s, %s, %s, 'travel') RETURNING id""",
                              (package, channel_id, uid)).fetchone()[0]
                 for uid, channel_id in (("BENCH-CALLS-1", None), ("BENCH-CALLS-2", channel))]
        conn.execute("""INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
                        SELECT unnest(%s::bigint[]), 'Ada Lovelace', 'ada@example.com', true, 100""", (items,))
        conn.execute("DELETE FROM outbox.http_requests")  # what the inserts queued: no worker here
        for (item, provider, status) in ((i, p, s) for i in items for p, s in (
                ("PROVIDER_A", "FAILED"), ("PROVIDER_B", "ABANDONED"), ("MAIL_PROVIDER", "SUCCESS"))):
            conn.execute("""INSERT INTO insurance.integration_emissions
                              (risk_item_id, provider, event, status, attempts, next_retry_at, error_history)
                            VALUES (%s, %s, 'POLICY_CREATED', %s, 1,
                                    CASE WHEN %s = 'FAILED' THEN now() + interval '1 hour' END, %s)
                            ON CONFLICT DO NOTHING""",
                         (item, provider, status, status,
                          json.dumps([] if status == "SUCCESS" else [{"code": "PROVIDER_UNAVAILABLE"}])))
        user = conn.execute("""INSERT INTO insurance.dashboard_users (email, password_hash)
                               VALUES (%s, %s) RETURNING id""", ("bench-ops@insurance.invalid", "$argon2id$v=19$m=7168,t=5,p=1$c2FsdA$aGFzaA")).fetchone()[0]
        conn.execute("""INSERT INTO insurance.dashboard_sessions (token_hash, user_id, expires_at)
                        VALUES (%s, %s, now() + interval '1 day')""",
                     (hashlib.sha256(SESSION_TOKEN.encode()).digest(), user))
        conn.execute("ANALYZE")


def parameters(url: str) -> dict:
    """The statements' parameters in a seeded database."""
    with psycopg.connect(url, autocommit=True) as conn:
        bare, item, channel_item = (
            conn.execute("SELECT id FROM insurance.risk_items WHERE policy_uid = %s", (uid,)).fetchone()[0]
            for uid in ("bench-holder-1", "BENCH-CALLS-1", "BENCH-CALLS-2"))
    return {"id": bare, "item": item, "channel_item": channel_item, "session": hashlib.sha256(SESSION_TOKEN.encode()).digest(),
            "claims": json.dumps({"sub": HOLDER, "email": HOLDER})}


def app_url(url: str) -> str:
    return url.replace("postgresql://postgres@", "postgresql://insurance_app@")


def cpu(pid: int) -> float:
    """Seconds the process has run on a CPU: /proc/PID/schedstat's nanoseconds (utime + stime in
    /proc/PID/stat count 10 ms ticks, too coarse for a few hundred calls)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9


def run(conn: psycopg.Connection, pid: int, name: str, params: dict, calls: int) -> tuple[float, str]:
    sql, role = STATEMENTS[name]
    args = {**params, "role": role}
    answer = conn.execute(sql, args, prepare=True).fetchone()[0]
    for _ in range(50):  # warm: plans cached, pages in shared buffers
        conn.execute(sql, args, prepare=True)
    before = cpu(pid)
    for _ in range(calls):
        conn.execute(sql, args, prepare=True).fetchone()
    return (cpu(pid) - before) / calls * 1e6, answer if isinstance(answer, str) else json.dumps(answer)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="HEAD", help="the commit measured beside this tree")
    parser.add_argument("--calls", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--keep", action="store_true", help="keep both databases (EXPLAIN them)")
    parser.add_argument("--reuse", action="store_true", help="measure the databases that --keep kept, as they are")
    args = parser.parse_args()
    with commit_tree(args.before) as before:
        builds = {args.before: before, "this tree": ROOT}
        dbs = {name: f"insurance_bench_calls_{i}" for i, name in enumerate(builds)}
        urls = {}
        for name, tree in builds.items():
            if args.reuse:
                urls[name] = f"postgresql://postgres@{PGHOST}:{PGPORT}/{dbs[name]}"
                continue
            log(f"deploying {name} into {dbs[name]}")
            urls[name] = deploy(tree, dbs[name])
            seed(urls[name])
    try:
        params = {name: parameters(url) for name, url in urls.items()}
        # The app's login for the app's statements; the bare endpoint's (bench/bare_app.py) is postgres.
        conns = {(name, login): psycopg.connect(app_url(url) if login == "app" else url, autocommit=True)
                 for name, url in urls.items() for login in ("app", "bare")}
        pids = {key: conn.execute("SELECT pg_backend_pid()").fetchone()[0] for key, conn in conns.items()}
        figures: dict[tuple[str, str], list[float]] = {}
        answers: dict[tuple[str, str], str] = {}
        for number in range(args.rounds):
            for statement in STATEMENTS:
                for build in (builds if number % 2 == 0 else reversed(list(builds))):
                    login = "bare" if STATEMENTS[statement][1] is None else "app"
                    us, answer = run(conns[build, login], pids[build, login], statement, params[build], args.calls)
                    figures.setdefault((statement, build), []).append(us)
                    answers[statement, build] = answer
            log(f"round {number + 1} done")
        names = list(builds)
        print(f"\n{'PostgreSQL CPU us per call':<28} " + " ".join(f"{n[:24]:>34}" for n in names)
              + f" {'after / before':>15}")
        for statement in STATEMENTS:
            cells, medians = [], []
            for build in names:
                values = figures[statement, build]
                medians.append(statistics.median(values))
                cells.append(f"{medians[-1]:7.1f} ({', '.join(f'{v:.0f}' for v in values)})")
            print(f"{statement:<28} " + " ".join(f"{c:>34}" for c in cells) + f" {medians[1] / medians[0]:>15.2f}")
        for statement in STATEMENTS:
            a, b = (answers[statement, n] for n in names)
            # The ids and uids differ between two databases: compare with them masked.
            print(f"answer of {statement}: {'the same bytes' if mask(a) == mask(b) else 'DIFFERENT'}"
                  f" ({len(a)} and {len(b)} bytes)")
            if mask(a) != mask(b):
                print(f"  {names[0]}: {a[:600]}\n  {names[1]}: {b[:600]}")
    finally:
        for conn in locals().get("conns", {}).values():
            conn.close()
        if not args.keep:
            drop(dbs.values())
    return 0


def mask(text: str) -> str:
    """The answer with what differs between two seeded databases masked: uuids and timestamps."""
    import re
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>", text)
    return re.sub(r"\d{4}-\d\d-\d\dT[0-9:.]+[+-]\d\d:\d\d", "<time>", text)


if __name__ == "__main__":
    raise SystemExit(main())
