"""PostgreSQL's CPU per emission, statement by statement, for two builds side by side.

    .venv/bin/python -m bench.emission_calls [--before <commit>] [--batches 40] [--rounds 4]

`make bench-emissions` says how much PostgreSQL spends per emission, not where. This runs the
emission path's statements as the services send them, a batch of 25 items at a time, on two
databases (one deployed from `--before`, one from this tree, as bench.calls does) and reads each
backend's CPU (/proc/PID/schedstat) around each statement:

  insert    the partner's 25 risk items and their holders (the insert trigger queues /dispatch)
  claim     outbox.claim_batch(25): the worker leases the 25 dispatches
  begin     integrations.begin_batch: the API claims the 25 emission keys
  record    integrations.record_calls: 25 SUCCESS outcomes, with their answer times
  delivered outbox.record_timed_deliveries: the worker records the 25 dispatches delivered
and, for items sold through a channel with a webhook endpoint (`webhooks` rows):
  claim     the 25 emission.succeeded deliveries
  delivered their 25 answers, with their times

Prints microseconds of PostgreSQL CPU per emission for each step, with and without webhooks.
"""
from __future__ import annotations

import argparse
import json
import statistics

import psycopg

from bench.calls import app_url, commit_tree, cpu, deploy, drop
from bench.lib import ROOT, log

BATCH = 25
SERVICE = ("SELECT {call} FROM (SELECT set_config('role', 'insurance_service', true), "
           "set_config('request.jwt.claims', '', true) OFFSET 0) AS _auth")
STEPS = {
    "claim": SERVICE.format(call="outbox.claim_batch('bench', %(size)s, 60)"),
    "begin": SERVICE.format(call="integrations.begin_batch(%(specs)s::jsonb, 'bench', 60)"),
    "record": SERVICE.format(call="integrations.record_calls(%(outcomes)s::jsonb, '{\"claimedBy\": \"bench\"}')"),
    "delivered": SERVICE.format(call="outbox.record_timed_deliveries('bench', %(results)s::jsonb, 20)"),
}
# What a build older than 1.1.0 calls instead (the same work without the per-minute call tallies).
BEFORE_TALLIES = {"record": ("integrations.record_calls(", "integrations.record_batch("),
                  "delivered": ("outbox.record_timed_deliveries(", "outbox.record_deliveries(")}


# The partner's batch: 25 items, each with a holder of its own, in one statement (the insert trigger
# queues /dispatch).
INSERT = """
    WITH items AS (
      INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant, insured_subject)
      SELECT %(package)s, %(channel)s, %(label)s || n, 'travel', '{"name": "Ada Lovelace"}'
        FROM generate_series(1, 25) n RETURNING id),
    holders AS (
      INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
      SELECT id, 'Ada Lovelace', 'holder-' || id || '@example.com', true, 100 FROM items)
    SELECT array_agg(id ORDER BY id) FROM items"""


def seed(url: str) -> dict:
    with psycopg.connect(url, autocommit=True) as conn:
        package = conn.execute("""INSERT INTO insurance.packages (uid, name, sales_integration_slug)
                                  VALUES ('bench', 'Bench', 'PROVIDER_A') RETURNING id""").fetchone()[0]
        conn.execute("INSERT INTO insurance.package_variants (package_id, code, name) VALUES (%s, 'travel', 'Travel')",
                     (package,))
        channel = conn.execute(
            "SELECT admin.create_channel('bench', 'bench-webhooks', '{v1,integrations/v2}', %s, '{}', %s::jsonb, "
            "'{bench}')", (b"k" * 32, json.dumps({"webhooks": ["http://127.0.0.1:9/hook"]}))).fetchone()[0]["id"]
        conn.execute("SELECT admin.set_webhook_secret('bench', %s, %s)", (channel, b"s" * 32))
        # Tables of some size, analyzed, as in production: plans made on empty tables (sequential
        # scans, kept by the sessions' plan caches) would make each batch dearer than the last.
        conn.execute("""WITH items AS (
                          INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject)
                          SELECT %s, 'seed-' || n, 'travel', '{"name": "Ada Lovelace"}'
                            FROM generate_series(1, 20000) n RETURNING id)
                        INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
                        SELECT id, 'Ada Lovelace', 'holder-' || id || '@example.com', true, 100 FROM items""", (package,))
        conn.execute("""INSERT INTO insurance.integration_emissions (risk_item_id, provider, event, status, attempts)
                        SELECT id, 'PROVIDER_A', 'SALES_DISPATCH', 'SUCCESS', 1 FROM insurance.risk_items""")
        conn.execute("UPDATE outbox.http_requests SET delivered_at = now(), last_status = 200")
        for table in ("insurance.risk_items", "insurance.beneficiaries", "insurance.risk_item_documents",
                      "insurance.integration_emissions", "outbox.http_requests"):
            conn.execute(f"VACUUM ANALYZE {table}")
    return {"package": package, "channel": channel}


class EmissionPath:
    """The emission path's statements on one database: two connections (the owner's inserts,
    the app's login for the services' calls), each backend's CPU read around each statement."""

    def __init__(self, url: str, ids: dict) -> None:
        self.owner = psycopg.connect(url, autocommit=True)
        self.app = psycopg.connect(app_url(url), autocommit=True)
        self.pids = {c: c.execute("SELECT pg_backend_pid()").fetchone()[0] for c in (self.owner, self.app)}
        self.ids = ids
        self.batch = 0
        tallies = self.app.execute("SELECT to_regproc('integrations.record_calls') IS NOT NULL").fetchone()[0]
        self.steps = {step: sql if tallies or step not in BEFORE_TALLIES else sql.replace(*BEFORE_TALLIES[step])
                      for step, sql in STEPS.items()}

    def timed(self, conn: psycopg.Connection, sql: str, params: dict, spent: dict, step: str):
        before = cpu(self.pids[conn])
        row = conn.execute(sql, params, prepare=True).fetchone()
        spent[step] = spent.get(step, 0.0) + cpu(self.pids[conn]) - before
        value = row[0] if row else None
        return json.loads(value) if isinstance(value, str) else value  # json answers as text, jsonb decoded

    def deliver(self, spent: dict, prefix: str, ms: bool) -> None:
        claimed = self.timed(self.app, self.steps["claim"], {"size": BATCH}, spent, prefix + "claim")
        rows = claimed["requests"]
        assert len(rows) == BATCH, f"{prefix}claim leased {len(rows)} rows, not {BATCH}"
        results = [{"id": r["id"], "status": 200, **({"ms": 3} if ms else {})} for r in rows]
        self.timed(self.app, self.steps["delivered"], {"results": json.dumps(results)}, spent, prefix + "delivered")

    def run(self, webhooks: bool, spent: dict) -> None:
        self.batch += 1
        items = self.timed(self.owner, INSERT, {"package": self.ids["package"], "label": f"b{self.batch}-",
                                                "channel": self.ids["channel"] if webhooks else None},
                           spent, "insert")
        self.deliver(spent, "", ms=False)
        specs = [{"riskItemId": i, "riskItemUid": None, "provider": None, "event": "SALES_DISPATCH"} for i in items]
        begun = self.timed(self.app, self.steps["begin"], {"specs": json.dumps(specs)}, spent, "begin")
        assert all(b.get("claimed") for b in begun), begun[:2]
        outcomes = [{"riskItemId": b["riskItemId"], "provider": b["provider"], "event": b["event"],
                     "outcome": {"status": "SUCCESS", "externalId": "X", "provider": b["provider"]}, "elapsedMs": 4}
                    for b in begun]
        self.timed(self.app, self.steps["record"], {"outcomes": json.dumps(outcomes)}, spent, "record")
        if webhooks:
            self.deliver(spent, "webhook ", ms=True)

    def close(self) -> None:
        self.owner.close()
        self.app.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="HEAD", help="the commit measured beside this tree")
    parser.add_argument("--batches", type=int, default=40, help="batches of 25 per round and kind")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    with commit_tree(args.before) as before:
        builds = {args.before: before, "this tree": ROOT}
        dbs = {name: f"insurance_bench_emission_calls_{i}" for i, name in enumerate(builds)}
        paths = {}
        for name, tree in builds.items():
            log(f"deploying {name} into {dbs[name]}")
            url = deploy(tree, dbs[name])
            paths[name] = EmissionPath(url, seed(url))
    try:
        for path in paths.values():  # warm: plans cached, pages in shared buffers
            for webhooks in (False, True):
                for _ in range(4):
                    path.run(webhooks, {})
        figures: dict[tuple[str, str, str], list[float]] = {}
        for number in range(args.rounds):
            for build in (builds if number % 2 == 0 else reversed(list(builds))):
                for kind in ("without", "webhooks"):
                    spent: dict[str, float] = {}
                    for _ in range(args.batches):
                        paths[build].run(kind == "webhooks", spent)
                    for step, seconds in spent.items():
                        figures.setdefault((kind, step, build), []).append(1e6 * seconds / (args.batches * BATCH))
            log(f"round {number + 1} done")
        names = list(builds)
        print(f"\n{'PostgreSQL CPU us per emission':<34} " + " ".join(f"{n[:24]:>30}" for n in names)
              + f" {'after / before':>15}")
        for kind in ("without", "webhooks"):
            steps = [s for (k, s, b) in figures if k == kind and b == names[0]]
            totals = [0.0, 0.0]
            for step in steps:
                cells, medians = [], []
                for build in names:
                    values = figures[kind, step, build]
                    medians.append(statistics.median(values))
                    cells.append(f"{medians[-1]:6.1f} ({', '.join(f'{v:.0f}' for v in values)})")
                totals = [t + m for t, m in zip(totals, medians)]
                print(f"{kind + ': ' + step:<34} " + " ".join(f"{c:>30}" for c in cells)
                      + f" {medians[1] / medians[0]:>15.2f}")
            print(f"{kind + ': all':<34} " + " ".join(f"{t:>30.1f}" for t in totals) + f" {totals[1] / totals[0]:>15.2f}")
    finally:
        for path in paths.values():
            path.close()
        drop(dbs.values())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
