"""Dashboard RPC under load: tRPC queries behind a session cookie, against the bare yardstick.

    .venv/bin/python -m bench.trpc [--seconds 10] [--connections 32]

Each tRPC call does what a dashboard request does: one SQL call as insurance_dashboard whose
statement resolves the session cookie into claims (dashboard.session_claims_or_deny) and runs
the procedure, plus the protocol's parsing and envelope. The yardstick is bench/bare_app.py
(one indexed SELECT), loaded in alternating rounds with the cases. Goals: byRiskItem at 0.75 of
the yardstick's req/s with a p99 at most twice its; the API's peak RSS at most 64 MB. The CPU
each request cost the API and PostgreSQL is printed beside (bench/lib.py `measured`).
"""
from __future__ import annotations

import argparse
import json
import statistics
from urllib.parse import quote

import httpx
import orjson
import psycopg

from app.dashboard.passwords import PASSWORD_HASHER
from bench.lib import (
    P99_GOAL,
    TRPC_GOAL,
    Load,
    app_environ,
    bench_database,
    cpu_table,
    goal,
    log,
    measured,
    medians,
    record,
    rss_line,
    rss_mb,
    serve,
    table,
)

EMAIL = "bench-ops@insurance.invalid"
PASSWORD = "bench password 0123456789"


def seed(admin_url: str) -> int:
    """A dashboard user and a risk item with three emissions; the item's id."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute("""INSERT INTO insurance.dashboard_users (email, password_hash) VALUES (%s, %s)
                        ON CONFLICT (email) DO UPDATE SET password_hash = excluded.password_hash, active = true""",
                     (EMAIL, PASSWORD_HASHER.hash(PASSWORD)))
        package = conn.execute("""INSERT INTO insurance.packages (uid, name) VALUES ('bench-trpc', 'Bench')
                                  ON CONFLICT (uid) DO UPDATE SET name = excluded.name RETURNING id""").fetchone()[0]
        conn.execute("""INSERT INTO insurance.package_variants (package_id, code, name) VALUES (%s, 'travel', 'Travel')
                        ON CONFLICT DO NOTHING""", (package,))
        item = conn.execute("""INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
                               VALUES (%s, 'BENCH-TRPC-1', 'travel')
                               ON CONFLICT (package_id, policy_uid) DO UPDATE SET status = 'active' RETURNING id""",
                            (package,)).fetchone()[0]
        for provider, status in (("PROVIDER_A", "FAILED"), ("PROVIDER_B", "ABANDONED"), ("MAIL_PROVIDER", "SUCCESS")):
            conn.execute("""INSERT INTO insurance.integration_emissions
                              (risk_item_id, provider, event, status, attempts, next_retry_at, error_history)
                            VALUES (%s, %s, 'POLICY_CREATED', %s, 1,
                                    CASE WHEN %s = 'FAILED' THEN now() + interval '1 hour' END,
                                    %s)
                            ON CONFLICT DO NOTHING""",
                         (item, provider, status, status,
                          orjson.dumps([] if status == "SUCCESS" else [{"code": "PROVIDER_UNAVAILABLE"}]).decode()))
        return item


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    admin_url = bench_database()
    item = seed(admin_url)
    env = app_environ()
    with serve("bench.bare_app:app", env) as bare, serve("app.asgi:app", env) as api:
        login = httpx.post(f"{api.url}/api/auth/login", json={"email": EMAIL, "password": PASSWORD})
        login.raise_for_status()
        after_login = rss_mb(api.process.pid)
        cookie = {"Cookie": f"dashboard_session={login.cookies['dashboard_session']}"}
        by_item = quote(json.dumps({"riskItemId": item}), safe="")
        batch = quote(json.dumps({"0": {"riskItemId": item}, "1": {"limit": 20}}), safe="")
        yardstick = ("bare SELECT (yardstick)", bare.url + f"/bare/risk-items/{item}", {}, bare)
        cases = [
            ("trpc byRiskItem (httpLink)", f"/api/trpc/integrationEmissions.byRiskItem?input={by_item}", {}),
            ("trpc list limit 50", "/api/trpc/integrationEmissions.list", {}),
            ("trpc batch byRiskItem+list", f"/api/trpc/integrationEmissions.byRiskItem,integrationEmissions.list"
                                          f"?batch=1&input={batch}", {}),
            ("trpc batch as JSONL stream", f"/api/trpc/integrationEmissions.byRiskItem,integrationEmissions.list"
                                           f"?batch=1&input={batch}", {"trpc-accept": "application/jsonl"}),
            ("trpc without session (401)", f"/api/trpc/integrationEmissions.byRiskItem?input={by_item}", None),
        ]
        targets = [yardstick]
        for name, path, extra in cases:
            check = httpx.get(api.url + path, headers={**cookie, **(extra or {})} if extra is not None else {})
            log(f"{name}: HTTP {check.status_code}, {len(check.content)} bytes")
            targets.append((name, api.url + path, {**cookie, **extra} if extra is not None else {}, api))
        # Alternating rounds: the yardstick and every case side by side, each keeps its median.
        runs: dict[str, list[Load]] = {name: [] for name, *_ in targets}
        cpu: dict[str, list[tuple[float, float]]] = {name: [] for name, *_ in targets}
        for number in range(args.rounds):
            for name, url, headers, server in targets:
                load, used = measured(name, url, headers, server, "postgres" if server is bare else "insurance_app",
                                      args.seconds, args.connections)
                cpu[name].append(used)
                if name.endswith("(401)"):
                    load.errors = 0  # every answer is the expected 401
                runs[name].append(load)
            log(f"round {number + 1}/{args.rounds}")
        rss = {"bare": bare.peak_rss_mb, "API": api.peak_rss_mb}
        steady = rss_mb(api.process.pid)
    baseline, *rows = [medians(loads) for loads in runs.values()]
    by_item_ratio = statistics.median(a.rps / b.rps for a, b in zip(runs[cases[0][0]], runs[yardstick[0]]))
    by_item_p99 = statistics.median(a.p99_ms / b.p99_ms for a, b in zip(runs[cases[0][0]], runs[yardstick[0]]))
    print(f"{args.connections} connections, median of {args.rounds} alternating rounds of {args.seconds} s")
    print(table([baseline, *rows], baseline))
    print(rss_line(rss) + f"; API resident after the login {after_login:.0f} MB, after the load {steady:.0f} MB "
          "(the peak holds one argon2 verification: 7 MiB)")
    costs = {name: (statistics.median(a for a, _ in v), statistics.median(d for _, d in v)) for name, v in cpu.items()}
    print(cpu_table(costs, baseline.name) + "  (medians)")
    goal("trpc byRiskItem throughput / bare (median round ratio)", by_item_ratio, TRPC_GOAL)
    goal(f"trpc byRiskItem p99 / bare p99 at {args.connections} connections (median round ratio)",
         by_item_p99, P99_GOAL, at_most=True)
    goal("API peak RSS", rss["API"], 64, at_most=True, unit=" MB")
    record("trpc", {"bare SELECT req/s": baseline.rps, "bare SELECT app CPU us": costs[baseline.name][0],
                    "bare SELECT db CPU us": costs[baseline.name][1]},
           **{f"{r.name} req/s": r.rps for r in rows},
           **{f"{name} {side} CPU us": cost[i] for name, cost in costs.items() if name != baseline.name
              for i, side in enumerate(("app", "db"))})

if __name__ == "__main__":
    main()
