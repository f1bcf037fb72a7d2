"""Benchmark: GET /api/postsales/v1/me/risk-items against the bare yardstick, in one run.

    make bench-postsales            # or: .venv/bin/python -m bench.postsales [--seconds 10]

Seeds its own database (`insurance_bench_postsales`, re-created each run): 20,000 risk items
of 10,000 holders, and one bench holder with 3 items. Then loads, in alternating rounds on
the same machine, the bare Falcon + asyncpg endpoint (bench/bare_app.py, one indexed SELECT)
and the real app's list route with a valid post-sales token, and prints req/s, p50 and p99
of each (median round) and the ratio (median of the rounds' ratios: each pair of rounds ran
back to back, so a burst of load from elsewhere skews a pair less than the totals). Goals: the
list route reaches at least 0.85 of the bare throughput, and its p99 at 64 connections is at
most twice the bare endpoint's. A third row runs the same app through PgBouncer in
transaction pooling mode (scripts/pgbouncer.sh, DB_STATEMENT_CACHE_SIZE=0).
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("BENCH_DB", "insurance_bench_postsales")  # not the other surfaces' database

import httpx
import psycopg

from bench.lib import (
    APP_URL,
    HOLDER_GOAL,
    P99_GOAL,
    SECRETS,
    Load,
    app_environ,
    bench_database,
    cpu_table,
    goal,
    log,
    measured,
    pgbouncer,
    record,
    rss_line,
    serve,
    table,
    through_pgbouncer,
    wrk,
)

HOLDER = "bench.holder@example.com"
LIST = "/api/postsales/v1/me/risk-items"


def seed(admin_url: str) -> int:
    """Items of many holders plus the bench holder's three; the id the bare endpoint reads."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        package_id = conn.execute(
            "INSERT INTO insurance.packages (uid, name) VALUES ('bench-postsales', 'Bench travel') RETURNING id"
        ).fetchone()[0]
        conn.execute("""INSERT INTO insurance.package_variants (package_id, code, name, coverages, premium)
                        VALUES (%s, 'travel', 'Travel', '[{"code": "BASIC", "limit": 1000}]', 19.9)""",
                     (package_id,))
        conn.execute("""
            WITH items AS (
              INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject)
              SELECT %s, 'bench-' || n, 'travel',
                     jsonb_build_object('name', 'Holder ' || n, 'phone', '+34 600 ' || n)
                FROM generate_series(1, 20000) n
              RETURNING id, policy_uid)
            INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
            SELECT id, 'Holder', 'holder' || (split_part(policy_uid, '-', 2)::int %% 10000) || '@example.com',
                   true, 100 FROM items""", (package_id,))
        conn.execute("""
            WITH items AS (
              INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject)
              SELECT %s, 'bench-holder-' || n, 'travel',
                     '{"name": "Bench Holder", "phone": "+34 600 000 000", "email": "bench.holder@example.com"}'
                FROM generate_series(1, 3) n
              RETURNING id)
            INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
            SELECT id, 'Bench Holder', %s, true, 100 FROM items""", (package_id, HOLDER))
        conn.execute("ANALYZE")
        return conn.execute("SELECT id FROM insurance.risk_items WHERE policy_uid = 'bench-holder-1'").fetchone()[0]


def median(loads: list[Load]) -> Load:
    """The round with the median throughput (its own p50 and p99)."""
    ordered = sorted(loads, key=lambda load: load.rps)
    chosen = ordered[len(ordered) // 2]
    return Load(chosen.name, chosen.rps, chosen.p50_ms, chosen.p99_ms, sum(load.errors for load in loads))


def holder_token() -> str:
    from app.app import ISSUER
    from app.tokens import TokenService
    tokens = TokenService(SECRETS["POSTSALES_JWT_SECRET"], "postsales", 3600, issuer=f"{ISSUER}-postsales")
    return tokens.issue(HOLDER, email=HOLDER)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=4, help="per round")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    log("deploying and seeding the bench database")
    admin_url = bench_database()
    item_id = seed(admin_url)
    env = app_environ()
    auth = {"Authorization": f"Bearer {holder_token()}"}

    # Both servers run side by side and are loaded in alternating rounds, so that a burst of
    # load from elsewhere on the machine hits both alike; each keeps its median round.
    # A third server runs the same app through PgBouncer (transaction pooling, no statement cache).
    with serve("bench.bare_app:app", env) as bare, serve("app.asgi:app", env) as app, pgbouncer() as port, \
            serve("app.asgi:app", {**env, "DATABASE_URL": through_pgbouncer(APP_URL, port),
                                   "DB_STATEMENT_CACHE_SIZE": "0"}) as bounced:
        for server in (app, bounced):
            check = httpx.get(server.url + LIST, headers=auth)
            if check.status_code != 200 or len(check.json()["data"]) != 3:
                log(f"the list route did not answer the holder's 3 items: {check.status_code} {check.text[:200]}")
                return 1
        targets = [("bare SELECT (bench/bare_app.py)", f"{bare.url}/bare/risk-items/{item_id}", {}, bare),
                   ("GET /me/risk-items (3 items)", app.url + LIST, auth, app),
                   ("same, through PgBouncer", bounced.url + LIST, auth, bounced)]
        for _, url, headers, _ in targets:
            wrk("warm-up", url, headers=headers, seconds=2, connections=args.connections)
        rounds: dict[str, list] = {name: [] for name, *_ in targets}
        cpu: dict[str, list] = {name: [] for name, *_ in targets}
        for number in range(args.rounds):
            for name, url, headers, server in targets:
                load, used = measured(name, url, headers, server, "postgres" if server is bare else "insurance_app",
                                      args.seconds, args.connections)
                rounds[name].append(load)
                cpu[name].append(used)
            log(f"round {number + 1}: " + ", ".join(f"{n} {r[-1].rps:.0f} req/s" for n, r in rounds.items()))
        baseline, listed, bounced_load = (median(rounds[name]) for name, *_ in targets)
        bare_rounds, list_rounds = rounds[targets[0][0]], rounds[targets[1][0]]
        paired = sorted(a.rps / b.rps for b, a in zip(bare_rounds, list_rounds))
        p99_paired = sorted(a.p99_ms / b.p99_ms for b, a in zip(bare_rounds, list_rounds))
        rss = {"bare": bare.peak_rss_mb, "app": app.peak_rss_mb, "app through PgBouncer": bounced.peak_rss_mb}

    print(f"{args.connections} connections, median of {args.rounds} alternating rounds of {args.seconds} s")
    print(table([baseline, listed, bounced_load], baseline))
    print(rss_line(rss))
    # The least-disturbed round of each: the lowest total.
    print(cpu_table({name: min(used, key=sum) for name, used in cpu.items()}, baseline.name)
          + "  (least-disturbed round)")
    ratio = paired[len(paired) // 2]
    print("ratio of each round (list / bare): " + ", ".join(f"{r:.2f}" for r in paired))
    print("p99 / bare p99 of each round: " + ", ".join(f"{r:.2f}" for r in p99_paired))
    goal("GET /me/risk-items throughput / bare (median round ratio)", ratio, HOLDER_GOAL)
    goal(f"GET /me/risk-items p99 / bare p99 at {args.connections} connections (median round ratio)",
         p99_paired[len(p99_paired) // 2], P99_GOAL, at_most=True)
    goal("API peak RSS", rss["app"], 64, at_most=True, unit=" MB")
    bare_cpu = min(cpu[baseline.name], key=sum)
    list_cpu = min(cpu[listed.name], key=sum)
    record("postsales", {"bare SELECT req/s": baseline.rps, "bare SELECT app CPU us": bare_cpu[0],
                         "bare SELECT db CPU us": bare_cpu[1]},
           **{"GET /me/risk-items req/s": listed.rps, "GET /me/risk-items app CPU us": list_cpu[0],
              "GET /me/risk-items db CPU us": list_cpu[1]})
    return 0 if listed.errors == 0 and baseline.errors == 0 and bounced_load.errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
