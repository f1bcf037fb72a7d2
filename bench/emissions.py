"""Emissions per second end to end (risk item INSERT -> emission SUCCESS), and the peers.

    .venv/bin/python bench/emissions.py [--items 2000] [--workers 1,2] [--api-workers 1] [--webhook-rounds 2]
                                        [--webhook-channels 8]

On a throwaway database (deployed with sqitch, dropped at the end) it starts the provider
sandbox (answering at once), the API and 1 then 2 outbox workers as real processes, inserts
the risk items in one transaction (the trigger enqueues one /dispatch each) and times until
every emission is SUCCESS. Each emission is two HTTP calls: worker -> API /dispatch -> provider.
In the same run, on the same database:
  - procrastinate (PyPI) draining as many no-op jobs with 2 worker processes (the peer);
  - Graphile Worker (npm) draining as many no-op jobs, one process, 16 at once (the horizon);
  - pgbench running the pipeline's own SQL transactions, the ceiling: a claim of 25 keys
    (integrations.begin_batch) and the record of their 25 SUCCESS outcomes (record_batch), each
    its own transaction as in the API; emissions/s = 25 x its TPS. The same for one key per
    transaction (a claim of one key, _begin_one, + record_emission) is printed beside.
  - partner webhooks (issue 20): alternating rounds of items without a channel and items spread
    evenly over --webhook-channels channels (8: the partner mix, a webhook on every channel),
    each with its own endpoint on the sandbox's receiver, timed until every emission is SUCCESS
    and, with webhooks, every emission.succeeded is delivered; the cost per emission is the
    difference of the two (wall and CPU), measured side by side. --webhook-channels 1 sends
    every event to one endpoint (bound by WEBHOOK_ENDPOINT_CONCURRENCY, not by CPU).
Prints rates, ratios, and the peak RSS (VmHWM) of the API and the workers.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.lib import cpu_seconds
from tests.conftest import free_port, wait_http

PY = sys.executable
PG = os.environ.get("BENCH_PG", "postgres@127.0.0.1:5432")


def peak_rss_mb(pid: int) -> float:
    """VmHWM of one process, in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except FileNotFoundError:
        pass
    return 0.0


def api_rss_mb(pid: int) -> list[float]:
    """VmHWM of each API process: uvicorn itself, or each of its --workers children."""
    children = [int(p) for p in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                                               text=True).stdout.split()]
    return [peak_rss_mb(p) for p in children or [pid]]


def with_children(pid: int) -> list[int]:
    return [pid] + [int(p) for p in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                                                   text=True).stdout.split()]


def wait_count(conn: psycopg.Connection, sql: str, args: tuple, want: int, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if conn.execute(sql, args).fetchone()[0] >= want:
            return
        time.sleep(0.05)
    raise SystemExit(f"timed out: {sql}")


def function_times(conn: psycopg.Connection) -> dict[str, tuple[int, float]]:
    """{schema.function: (calls, self milliseconds)} of the database so far (track_functions)."""
    return {f"{r[0]}.{r[1]}": (r[2], r[3]) for r in conn.execute(
        "SELECT schemaname, funcname, sum(calls)::bigint, sum(self_time) FROM pg_stat_user_functions "
        "GROUP BY 1, 2")}


GRAPHILE_DIR = ROOT / "bench" / "graphile"


def graphile_worker_rate(admin_url: str, conn: psycopg.Connection, jobs: int) -> float:
    """Graphile Worker (npm, installed in bench/graphile/node_modules by `make bench-emissions`):
    one process running 16 jobs at once drains `jobs` no-op jobs queued in one transaction;
    jobs per second, from the commit until its queue is empty (it deletes a job when done)."""
    cli = GRAPHILE_DIR / "node_modules" / ".bin" / "graphile-worker"
    if not cli.exists():
        raise SystemExit("Graphile Worker is not installed: npm ci --prefix bench/graphile (make bench-emissions does)")
    subprocess.run([str(cli), "-c", admin_url, "--schema-only"], cwd=GRAPHILE_DIR, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = subprocess.Popen([str(cli), "-c", admin_url, "--jobs", "16"], cwd=GRAPHILE_DIR,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(2)  # node started, tasks loaded, listening
        conn.execute("SELECT graphile_worker.add_job('noop', '{}'::json) FROM generate_series(1, %s)", (jobs,))
        t0 = time.perf_counter()
        wait_count(conn, "SELECT %s - count(*) FROM graphile_worker.jobs", (jobs,), jobs)
        return jobs / (time.perf_counter() - t0)
    finally:
        worker.terminate()
        worker.wait(10)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--api-workers", type=int, default=1,
                        help="N > 1: the emissions run again with `serve --workers N`, to show how the rate grows")
    parser.add_argument("--pgbench-seconds", type=int, default=10)
    parser.add_argument("--webhook-rounds", type=int, default=2,
                        help="alternating rounds without and with a webhook on every item (0: none)")
    parser.add_argument("--webhook-channels", type=int, default=8,
                        help="the webhook rounds' items spread over this many channels, each with its own "
                             "endpoint (1: one endpoint takes every event)")
    parser.add_argument("--peer-concurrency", type=int, default=50,
                        help="procrastinate worker -c (50: its best of 1, 10, 50 here)")
    parser.add_argument("--function-stats", action="store_true",
                        help="print the SQL functions' own time per emission of each run (track_functions on the "
                             "throwaway database: where PostgreSQL's share goes)")
    args = parser.parse_args()

    db = f"insurance_bench_{os.getpid()}"
    admin_url = f"postgresql://{PG}/{db}"
    subprocess.run(["psql", "-X", "-q", f"postgresql://{PG}/postgres", "-c", f'CREATE DATABASE "{db}"'], check=True)
    procs: list[subprocess.Popen] = []
    try:
        subprocess.run(["sqitch", "--chdir", str(ROOT), "deploy", f"db:pg://{PG}/{db}"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={**os.environ, "SQITCH_FULLNAME": "bench", "SQITCH_EMAIL": "bench@insurance.invalid"})
        if args.function_stats:
            subprocess.run(["psql", "-X", "-q", f"postgresql://{PG}/postgres", "-c",
                            f'ALTER DATABASE "{db}" SET track_functions = \'all\''], check=True)
        sandbox_port, api_port = free_port(), free_port()
        sandbox, api = f"http://127.0.0.1:{sandbox_port}", f"http://127.0.0.1:{api_port}"
        env = {**os.environ, "APP_ENV": "test", "LOG_LEVEL": "warning", "PORT": str(api_port),
               "DATABASE_URL": f"postgresql://insurance_app@{PG.split('@', 1)[1]}/{db}", "ADMIN_DATABASE_URL": admin_url,
               "PUBLIC_BASE_URL": api, "SERVICE_ROLE_SECRET": "bench-" + "x" * 40,
               "WEBHOOK_SECRET_KEY": "bench-webhooks-" + "x" * 40}

        def start(*cmd: str) -> subprocess.Popen:
            proc = subprocess.Popen([PY, "-m", "app", *cmd], env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
            procs.append(proc)
            return proc

        sandbox_proc = start("sandbox", "--port", str(sandbox_port))
        wait_http(f"{sandbox}/_sandbox/health")
        subprocess.run([PY, "-m", "app", "sandbox", "configure", sandbox], env=env, cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        conn = psycopg.connect(admin_url, autocommit=True)
        pkg = conn.execute("""INSERT INTO insurance.packages (uid, name, sales_integration_slug)
                              VALUES ('bench', 'Bench', 'PROVIDER_A') RETURNING id""").fetchone()[0]
        conn.execute("INSERT INTO insurance.package_variants (package_id, code, name) VALUES (%s, 'travel', 'Travel')",
                     (pkg,))

        def backends() -> list[int]:
            return [r[0] for r in conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                                               "AND pid <> pg_backend_pid()")]

        def run_emissions(label: str, n_workers: int, channels: list[str] | None = None,
                          cpu: dict[str, float] | None = None) -> tuple[float, float]:
            workers = [start("worker") for _ in range(n_workers)]
            time.sleep(1.5)  # imported, pool open, listening
            # Where the CPU goes, per emission: each process of the pipeline and PostgreSQL.
            groups = {"API": with_children(api_proc.pid), "worker(s)": [w.pid for w in workers],
                      "sandbox": [sandbox_proc.pid]}
            before = {name: cpu_seconds(pids) for name, pids in groups.items()}
            functions_before = function_times(conn) if args.function_stats else {}
            db_before = cpu_seconds(backends())
            with conn.transaction():
                ids = [r[0] for r in conn.execute(
                    """INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant, insured_subject)
                       SELECT %s, (%s::uuid[])[1 + n %% greatest(cardinality(%s::uuid[]), 1)], %s || n, 'travel',
                              '{"name": "Ada Lovelace", "email": "ada@example.com"}'
                         FROM generate_series(1, %s) n RETURNING id""",
                    (pkg, channels or [], channels or [], label, args.items)).fetchall()]
                conn.execute("""INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
                                SELECT unnest(%s::bigint[]), 'Ada Lovelace', 'ada@example.com', true, 100""", (ids,))
            t0 = time.perf_counter()
            wait_count(conn, "SELECT count(*) FROM insurance.integration_emissions WHERE risk_item_id BETWEEN %s AND %s "
                             "AND status = 'SUCCESS'", (min(ids), max(ids)), args.items)
            if channels:  # and every event at its partner
                wait_count(conn, "SELECT count(*) FROM outbox.http_requests WHERE channel_id = ANY(%s::uuid[]) "
                                 "AND delivered_at IS NOT NULL AND (body #>> '{data,riskItemId}')::bigint BETWEEN %s AND %s",
                           (channels, min(ids), max(ids)), args.items)
            elapsed = time.perf_counter() - t0
            used = {name: sum(t - before[name].get(pid, 0.0) for pid, t in cpu_seconds(pids).items())
                    for name, pids in groups.items()}
            used["PostgreSQL"] = sum(t - db_before.get(pid, 0.0) for pid, t in cpu_seconds(backends()).items())
            print(f"  CPU per emission ({label}): " + ", ".join(
                f"{name} {1e6 * sec / args.items:.0f} us" for name, sec in used.items())
                + f"; total {1e6 * sum(used.values()) / args.items:.0f} us, wall {1e6 * elapsed / args.items:.0f} us",
                flush=True)
            if args.function_stats:
                time.sleep(1.5)  # backends report their statistics at most once a second
                after = function_times(conn)
                spent = sorted(((after[f][1] - functions_before.get(f, (0, 0.0))[1], after[f][0] -
                                 functions_before.get(f, (0, 0.0))[0], f) for f in after), reverse=True)
                print("  SQL functions' own time per emission: " + ", ".join(
                    f"{name} {1e3 * ms / args.items:.0f} us ({calls / args.items:.2f} calls)"
                    for ms, calls, name in spent[:8] if ms > 0), flush=True)
            if cpu is not None:
                cpu.update(used)
            if not channels:
                cpu_accounts[n_workers] = {name: 1e6 * sec / args.items for name, sec in used.items()}
            rss = max(peak_rss_mb(w.pid) for w in workers)
            for w in workers:
                w.terminate()
                w.wait()
                procs.remove(w)
            return args.items / elapsed, rss

        def webhook_rounds(run, n_workers: int) -> list[tuple[str, float, float]]:
            """Alternating rounds: items of no channel, then items spread over the channels, each
            with one webhook of its own (the sandbox's receiver) that takes every event.
            [(kind, rate, CPU us per emission)]."""
            import secrets as _secrets
            channels = []
            for i in range(max(1, args.webhook_channels)):
                # Webhooks need an integrations/* branch (issue 29); a refusal is an answer, not an error.
                made = conn.execute(
                    "SELECT admin.create_channel('bench', %s, '{v1,integrations/v2}', %s, '{}', %s::jsonb, '{bench}')",
                    (f"bench-webhooks-{i}", _secrets.token_bytes(32),
                     json.dumps({"webhooks": [f"{sandbox}/_sandbox/webhooks/bench-{i}"]}))).fetchone()[0]
                if not isinstance(made, dict) or not made.get("id"):
                    raise SystemExit(f"the bench's channel was refused: {made}")
                channel = made["id"]
                conn.execute("SELECT admin.set_webhook_secret('bench', %s, %s)", (channel, _secrets.token_bytes(32)))
                channels.append(channel)
            rounds = []
            for r in range(args.webhook_rounds):
                for kind, target in (("without", None), ("webhooks", channels)):
                    cpu: dict[str, float] = {}
                    rate, rss = run(f"wh{r}{kind}-", n_workers, target, cpu)
                    rounds.append((kind, rate, 1e6 * sum(cpu.values()) / args.items))
                    webhook_rss.append(rss)
                    print(f"emissions {kind} webhooks, round {r + 1}, {n_workers} worker(s): {rate:8.0f}/s "
                          f"(worker peak RSS {rss:.0f} MB)", flush=True)
            return rounds

        webhooks: list[tuple[str, float, float]] = []
        webhook_rss: list[float] = []
        cpu_accounts: dict[int, dict[str, float]] = {}  # the last plain run of each worker count
        results: dict[tuple[int, int], tuple[float, float]] = {}
        api_rss: dict[int, list[float]] = {}
        for api_workers in sorted({1, args.api_workers}):
            api_proc = start("serve", "--port", str(api_port), "--workers", str(api_workers))
            wait_http(f"{api}/healthz")
            if api_workers > 1:
                time.sleep(2)  # every uvicorn worker up, not just the first
            for n in [int(x) for x in args.workers.split(",")]:
                results[api_workers, n] = run_emissions(f"a{api_workers}w{n}-", n)
                rate, rss = results[api_workers, n]
                print(f"emissions, API x{api_workers}, {n} worker(s): {rate:8.0f}/s  (worker peak RSS {rss:.0f} MB)",
                      flush=True)
            if api_workers == 1 and args.webhook_rounds:
                webhooks = webhook_rounds(run_emissions, max(int(x) for x in args.workers.split(",")))
            api_rss[api_workers] = api_rss_mb(api_proc.pid)
            api_proc.terminate()
            api_proc.wait()
            procs.remove(api_proc)
        issued = httpx.get(f"{sandbox}/_sandbox/stats").json()["policies"]["PROVIDER_A"]

        # The peer: procrastinate, 2 worker processes, no-op jobs, same database.
        penv = {**os.environ, "BENCH_PROCRASTINATE_URL": admin_url, "PYTHONPATH": str(ROOT)}
        subprocess.run([PY, "-m", "procrastinate", "--app=bench.procrastinate_noop.app", "schema", "--apply"],
                       env=penv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        pworkers = [subprocess.Popen([PY, "-m", "procrastinate", "--app=bench.procrastinate_noop.app", "worker",
                                      "-c", str(args.peer_concurrency)], env=penv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    for _ in range(2)]
        procs.extend(pworkers)
        time.sleep(2)
        os.environ["BENCH_PROCRASTINATE_URL"] = admin_url
        from bench.procrastinate_noop import app as papp
        from bench.procrastinate_noop import noop
        with papp.open():
            noop.batch_defer(*[{} for _ in range(args.items)])
        t0 = time.perf_counter()
        wait_count(conn, "SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'", (), args.items)
        peer = args.items / (time.perf_counter() - t0)
        print(f"procrastinate, 2 workers: {peer:8.0f}/s (no-op jobs)", flush=True)
        for w in pworkers:
            w.terminate()
            w.wait()
            procs.remove(w)

        graphile = graphile_worker_rate(admin_url, conn, args.items)
        print(f"Graphile Worker, 1 process x 16 jobs: {graphile:8.0f}/s (no-op jobs)", flush=True)

        # The ceiling: pgbench running the SQL transactions the pipeline runs for a batch of 25
        # (the worker's dispatch batch), then, for comparison, those of one key at a time.
        conn.execute("""INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
                        SELECT %s, 'pgb' || n, 'travel' FROM generate_series(1, 1000) n""", (pkg,))
        lo, hi = conn.execute("SELECT min(id), max(id) FROM insurance.risk_items WHERE policy_uid LIKE 'pgb%%'").fetchone()
        conn.execute("UPDATE insurance.packages SET sales_integration_slug = NULL WHERE id = %s", (pkg,))
        keys = ("SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('riskItemId', :rid + n, 'provider', "
                "'PROVIDER_A', 'event', 'E' || :ev{}) ORDER BY n) FROM generate_series(0, 24) n")
        success = """'{"status": "SUCCESS", "externalId": "X"}'"""
        claimed_by = """'{"claimedBy": "pgbench"}'"""
        with_outcome = f", 'outcome', {success}::jsonb"
        scripts = {
            "batch": (f"\\set rid random({lo}, {hi - 25})\n\\set ev random(1, 1000000000)\n"
                      f"SELECT integrations.begin_batch(({keys.format('')}), 'pgbench', 60);\n"
                      f"SELECT integrations.record_batch(({keys.format(with_outcome)}), {claimed_by});\n"),
            "one": (f"\\set rid random({lo}, {hi})\n\\set ev random(1, 1000000000)\n"
                    "SELECT integrations._begin_one(jsonb_build_object('riskItemId', :rid, 'provider', 'PROVIDER_A', "
                    "'event', 'E' || :ev), 'pgbench', 60);\n"
                    f"SELECT integrations.record_emission(:rid, 'PROVIDER_A', 'E' || :ev, {success}, {claimed_by});\n"),
        }
        ceiling = {}
        for name, text in scripts.items():
            with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as script:
                script.write(text)
            out = subprocess.run(["pgbench", "-n", "-c", "4", "-j", "2", "-T", str(args.pgbench_seconds),
                                  "-f", script.name, admin_url], capture_output=True, text=True, check=True).stdout
            os.unlink(script.name)
            ceiling[name] = float(next(line for line in out.splitlines() if line.startswith("tps")).split()[2])
        tps = 25 * ceiling["batch"]
        print(f"pgbench (the pipeline's transactions, 4 clients): {ceiling['batch']:8.0f} batches of 25/s "
              f"= {tps:.0f} emissions/s (ceiling); one key per transaction pair: {ceiling['one']:.0f}/s", flush=True)

        print()
        print(f"items {args.items} per run, sandbox issued {issued} policies; same run: procrastinate {peer:.0f}/s, "
              f"Graphile Worker {graphile:.0f}/s, pgbench ceiling {tps:.0f} emissions/s")
        for (api_workers, n), (rate, rss) in results.items():
            print(f"  API x{api_workers}, {n} worker(s): {rate:6.0f}/s = {rate / peer:4.2f} x procrastinate, "
                  f"{rate / graphile:4.2f} x Graphile Worker, {rate / tps:4.2f} x pgbench; worker peak RSS {rss:.0f} MB")
        for api_workers, peaks in api_rss.items():
            print(f"  API x{api_workers} peak RSS (each process): " + ", ".join(f"{mb:.0f} MB" for mb in peaks))
        if webhooks:
            def mean(kind: str, i: int) -> float:
                values = [w[i] for w in webhooks if w[0] == kind]
                return sum(values) / len(values)
            plain, hooked = mean("without", 1), mean("webhooks", 1)
            print(f"  webhooks on every item ({args.webhook_channels} channels, an endpoint each): {hooked:6.0f}/s vs {plain:6.0f}/s without "
                  f"(ratio {hooked / plain:.2f}); cost per emission: wall {1e6 / hooked - 1e6 / plain:+.0f} us, "
                  f"CPU {mean('webhooks', 2) - mean('without', 2):+.0f} us ({args.webhook_rounds} alternating rounds)")
        counts = [int(x) for x in args.workers.split(",")]
        if args.api_workers > 1:
            for n in counts:
                grow = results[args.api_workers, n][0] / results[1, n][0]
                print(f"  rate with API x{args.api_workers} / API x1, {n} worker(s): {grow:.2f}")
        top = results[1, max(counts)][0]
        from bench.lib import goal, record
        goal(f"emissions, {max(counts)} workers / pgbench ceiling", top / tps, 0.75)
        goal(f"emissions, {max(counts)} workers / procrastinate no-op jobs", top / peer, 2.5)
        goal(f"emissions, {max(counts)} workers / Graphile Worker no-op jobs (the horizon)", top / graphile, 1.0)
        goal("worker peak RSS", max([rss for _, rss in results.values()] + webhook_rss), 48, at_most=True, unit=" MB")
        goal("API peak RSS", max(max(p) for p in api_rss.values()), 64, at_most=True, unit=" MB")
        figures = {f"emissions/s, API x{a}, {n} worker(s)": rate for (a, n), (rate, _) in results.items()}
        figures.update({f"CPU us per emission, {n} worker(s), {name}": us for n, used in cpu_accounts.items()
                        for name, us in used.items()})
        if webhooks:
            figures.update({"emissions/s with a webhook on every item": hooked, "emissions/s without webhooks": plain,
                            "webhooks on every item / none": hooked / plain,
                            "CPU us per emission, webhooks on every item minus none": mean("webhooks", 2) - mean("without", 2)})
        record("emissions", {"procrastinate no-op jobs/s": peer, "Graphile Worker no-op jobs/s": graphile,
                             "pgbench ceiling emissions/s": tps, "pgbench one key per transaction pair/s": ceiling["one"]},
               **figures)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.run(["psql", "-X", "-q", f"postgresql://{PG}/postgres", "-c",
                        f"SELECT cron.unschedule(jobid) FROM cron.job WHERE database = '{db}'"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run(["psql", "-X", "-q", f"postgresql://{PG}/postgres", "-c",
                        f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)'], stdout=subprocess.DEVNULL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
