"""Dashboard RPC under load: tRPC queries behind a session cookie, against the bare yardstick.

    .venv/bin/python -m bench.trpc [--seconds 10] [--connections 32]

Each tRPC call does what a dashboard request does: the session lookup (one SQL call as the
anonymous role) and the procedure (one SQL call as insurance_dashboard with the claims), plus
the protocol's parsing and envelope. The yardstick is bench/bare_app.py (one indexed SELECT).
"""
from __future__ import annotations

import argparse
import json
from urllib.parse import quote

import httpx
import orjson
import psycopg

from app.dashboard.passwords import PASSWORD_HASHER
from bench.lib import Load, app_environ, bench_database, log, serve, table, wrk

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
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    args = parser.parse_args()
    admin_url = bench_database()
    item = seed(admin_url)
    env = app_environ()
    rows: list[Load] = []
    with serve("bench.bare_app:app", env) as bare:
        baseline = wrk("bare SELECT (yardstick)", f"{bare.url}/bare/risk-items/{item}",
                       seconds=args.seconds, connections=args.connections)
    with serve("app.asgi:app", env) as api:
        login = httpx.post(f"{api.url}/api/auth/login", json={"email": EMAIL, "password": PASSWORD})
        login.raise_for_status()
        cookie = {"Cookie": f"dashboard_session={login.cookies['dashboard_session']}"}
        by_item = quote(json.dumps({"riskItemId": item}), safe="")
        batch = quote(json.dumps({"0": {"riskItemId": item}, "1": {"limit": 20}}), safe="")
        cases = [
            ("trpc byRiskItem (httpLink)", f"/api/trpc/integrationEmissions.byRiskItem?input={by_item}", {}),
            ("trpc list limit 50", "/api/trpc/integrationEmissions.list", {}),
            ("trpc batch byRiskItem+list", f"/api/trpc/integrationEmissions.byRiskItem,integrationEmissions.list"
                                          f"?batch=1&input={batch}", {}),
            ("trpc batch as JSONL stream", f"/api/trpc/integrationEmissions.byRiskItem,integrationEmissions.list"
                                           f"?batch=1&input={batch}", {"trpc-accept": "application/jsonl"}),
            ("trpc without session (401)", f"/api/trpc/integrationEmissions.byRiskItem?input={by_item}", None),
        ]
        for name, path, extra in cases:
            check = httpx.get(api.url + path, headers={**cookie, **(extra or {})} if extra is not None else {})
            log(f"{name}: HTTP {check.status_code}, {len(check.content)} bytes")
            headers = {**cookie, **extra} if extra is not None else {}
            load = wrk(name, api.url + path, headers=headers, seconds=args.seconds, connections=args.connections)
            if extra is None:
                load.errors = 0  # every answer is the expected 401
            rows.append(load)
        rss = api.peak_rss_mb
    print(table([baseline, *rows], baseline))
    print(f"app peak RSS: {rss:.0f} MB")


if __name__ == "__main__":
    main()
