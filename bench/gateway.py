"""Gateway benchmark: authorize and GET /v1/risk-items against the bare yardstick, same run.

    make bench-gateway                      # or: .venv/bin/python -m bench.gateway
    BENCH_ROUNDS=5 BENCH_SECONDS=3 BENCH_CONNECTIONS=32   # the defaults
    PGPORT=6001 BENCH_READ_PORT=6002 make bench-gateway   # on `make ha-up`'s formation: the
                                    # list once more from a second API reading on the standby

With BENCH_READ_PORT (a standby of the PGHOST:PGPORT primary) a second API process with
READ_DATABASE_URL on that standby is loaded in the same rounds, and the standby's read
routes are printed beside the same routes on the primary (the ratio), with the transactions
the standby served as proof that the reads went there.

The bare endpoint (bench/bare_app.py) and the app run side by side, each as one uvicorn
process, and are loaded by wrk (1 thread) in alternating rounds, so that the noise of a
shared machine falls on both; each figure is the median of the rounds. Because other
work on the machine moves req/s a lot, the CPU time each request costs (the uvicorn
process and its PostgreSQL backends, from /proc) is reported too: it hardly moves with
contention. On an idle machine the one Python process is the bottleneck (docs/performance.md), so
req/s ratios tend to the app-CPU ratio; on a saturated one, to the total-CPU ratio. The bench channel
holds one risk item (the list answers the same single row the bare SELECT reads) and a
second channel holds ten (a fuller window). Targets: authorize and the one-item list at
>= 0.7 x the bare endpoint's req/s, as every read; the ten-item list too, with a p99 at most
twice the bare endpoint's.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import statistics
import sys
import time

# A database of its own: other surfaces' benchmarks deploy other plans into theirs.
os.environ.setdefault("BENCH_DB", "insurance_bench_gateway")

import httpx
import psycopg

from bench import lib

READ_PORT = os.environ.get("BENCH_READ_PORT", "")  # a standby of the bench database's primary
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
SECONDS = int(os.environ.get("BENCH_SECONDS", "3"))
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "32"))


def seed(admin_url: str) -> dict:
    """Two channels with their keys and items; idempotent (fixed names and uids)."""
    keys = {"one": "ik_bench-gateway-one", "ten": "ik_bench-gateway-ten"}
    with psycopg.connect(admin_url, autocommit=True) as conn:
        package = conn.execute(
            """INSERT INTO insurance.packages (uid, name) VALUES ('bench-gateway', 'Bench')
               ON CONFLICT (uid) DO UPDATE SET name = EXCLUDED.name RETURNING id""").fetchone()[0]
        conn.execute("""INSERT INTO insurance.package_variants (package_id, code, name)
                        VALUES (%s, 'travel', 'Travel') ON CONFLICT DO NOTHING""", (package,))
        for name, key in keys.items():
            channel = conn.execute(
                """INSERT INTO insurance.channels (name, branches, api_key_hash) VALUES (%s, '{v1}', %s)
                   ON CONFLICT (api_key_hash) DO UPDATE SET name = EXCLUDED.name RETURNING id""",
                (f"bench-{name}", hashlib.sha256(key.encode()).digest())).fetchone()[0]
            count = 1 if name == "one" else 10
            conn.execute(
                """INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant, insured_subject)
                   SELECT %s, %s, %s || '-' || n, 'travel', '{"name": "Bench Holder"}'
                     FROM generate_series(1, %s) AS n
                   ON CONFLICT (package_id, policy_uid) DO NOTHING""", (package, channel, f"BENCH-{name}", count))
        item_id = conn.execute("SELECT id FROM insurance.risk_items WHERE policy_uid = 'BENCH-one-1'").fetchone()[0]
    return {"keys": keys, "item_id": item_id}


def standby_transactions() -> int:
    """Transactions the standby (BENCH_READ_PORT) has served in the bench database."""
    with psycopg.connect(f"postgresql://postgres@{lib.PGHOST}:{READ_PORT}/postgres", autocommit=True) as conn:
        return conn.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = %s",
                            (lib.BENCH_DB,)).fetchone()[0]


def main() -> int:
    admin_url = lib.bench_database()
    data = seed(admin_url)
    env = lib.app_environ()
    run = {"seconds": SECONDS, "connections": CONNECTIONS}

    read_env = lib.app_environ(READ_DATABASE_URL=f"postgresql://insurance_app@{lib.PGHOST}:{READ_PORT}/{lib.BENCH_DB}") \
        if READ_PORT else None
    with lib.serve("bench.bare_app:app", env) as bare, lib.serve("app.asgi:app", env) as app, \
            (lib.serve("app.asgi:app", read_env) if read_env else contextlib.nullcontext()) as standby_app:
        v1 = f"{app.url}/api/gateway/v1"
        tokens = {}
        for name, key in data["keys"].items():
            answer = httpx.get(f"{v1}/auth/authorize", headers={"x-api-key": key})
            answer.raise_for_status()
            tokens[name] = answer.json()["data"]["access_token"]
            listed = httpx.get(f"{v1}/risk-items", headers={"Authorization": f"Bearer {tokens[name]}"})
            assert listed.status_code == 200 and listed.json()["data"]["total"] == (1 if name == "one" else 10)
        loads = {
            "bare: one indexed SELECT": (f"{bare.url}/bare/risk-items/{data['item_id']}", {}, bare, "postgres"),
            "gateway: GET /v1/auth/authorize": (f"{v1}/auth/authorize", {"x-api-key": data["keys"]["one"]},
                                                app, "insurance_app"),
            "gateway: GET /v1/risk-items (1)": (f"{v1}/risk-items", {"Authorization": f"Bearer {tokens['one']}"},
                                                app, "insurance_app"),
            "gateway: GET /v1/risk-items (10)": (f"{v1}/risk-items", {"Authorization": f"Bearer {tokens['ten']}"},
                                                 app, "insurance_app"),
        }
        if standby_app is not None:
            standby_v1 = f"{standby_app.url}/api/gateway/v1"
            for n in ("1", "10"):
                token = tokens["one" if n == "1" else "ten"]
                loads[f"standby reads: GET /v1/risk-items ({n})"] = (
                    f"{standby_v1}/risk-items", {"Authorization": f"Bearer {token}"}, standby_app, "insurance_app")
            time.sleep(1)  # the API has looked at the standby's lag
            served_before = standby_transactions()
        runs: dict[str, list[lib.Load]] = {name: [] for name in loads}
        cpu: dict[str, list[tuple[float, float]]] = {name: [] for name in loads}
        for round_ in range(1, ROUNDS + 1):
            lib.log(f"round {round_}/{ROUNDS}")
            for name, (url, headers, server, db_user) in loads.items():
                load, micros = lib.measured(name, url, headers, server, db_user, **run)
                runs[name].append(load)
                cpu[name].append(micros)
        bare_rss, app_rss = bare.peak_rss_mb, app.peak_rss_mb

    baseline, *rows = [lib.medians(r) for r in runs.values()]
    print(lib.table([baseline, *rows], baseline))
    if standby_app is not None:
        by_name = {r.name: r for r in rows}
        for n in ("1", "10"):
            on_standby, on_primary = by_name[f"standby reads: GET /v1/risk-items ({n})"], \
                by_name[f"gateway: GET /v1/risk-items ({n})"]
            print(f"standby / primary, GET /v1/risk-items ({n}): {on_standby.rps / on_primary.rps:.2f} x req/s, "
                  f"p99 {on_standby.p99_ms:.1f} ms vs {on_primary.p99_ms:.1f} ms")
        print(f"transactions the standby served: {standby_transactions() - served_before} "
              "(the standby rows' database CPU is not in the table: it is counted on the primary only)")
    print(f"medians of {ROUNDS} alternating rounds of {SECONDS}s x {CONNECTIONS} connections; "
          + lib.rss_line({"bare": bare_rss, "gateway app": app_rss}))
    costs = {name: (statistics.median(a for a, _ in v), statistics.median(d for _, d in v)) for name, v in cpu.items()}
    print(lib.cpu_table(costs, baseline.name) + "  (medians)")
    met = [lib.goal(f"{r.name} throughput / bare", r.rps / baseline.rps, lib.GATEWAY_GOAL) for r in rows]
    met += [lib.goal(f"{r.name} p99 / bare p99 at {CONNECTIONS} connections", r.p99_ms / baseline.p99_ms,
                     lib.P99_GOAL, at_most=True) for r in rows]
    lib.goal("API peak RSS", app_rss, 64, at_most=True, unit=" MB")
    lib.record("gateway", {"bare SELECT req/s": baseline.rps, "bare SELECT app CPU us": costs[baseline.name][0],
                           "bare SELECT db CPU us": costs[baseline.name][1]},
               **{f"{r.name} req/s": r.rps for r in rows},
               **{f"{name} {side} CPU us": cost[i] for name, cost in costs.items() if name != baseline.name
                  for i, side in enumerate(("app", "db"))})
    return 0 if all(met) and not any(r.errors for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
