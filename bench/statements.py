"""What one emission costs in SQL statements and round trips, counted rather than timed.

    .venv/bin/python -m bench.statements [--batch 25] [--event SALES_DISPATCH] [--show]

On a throwaway database (sqitch, dropped at the end) it runs one batch of emissions the way
the pipeline does (integrations.begin_batch, then integrations.record_batch with SUCCESS
outcomes) and one batch of outbox deliveries the way the worker does (outbox.claim_batch,
outbox.record_deliveries), with auto_explain logging every statement that runs, nested ones
included (`log_nested_statements`, sent to this client as NOTICEs). Prints the statements each
call ran and what that makes per emission, beside the round trips (calls) per emission.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import orjson
import psycopg

ROOT = Path(__file__).resolve().parent.parent
PG = os.environ.get("BENCH_PG", "postgres@127.0.0.1:5432")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=25, help="emissions per batch (WORKER_DISPATCH_BATCH, 25)")
    parser.add_argument("--show", action="store_true", help="print each statement's first line")
    parser.add_argument("--event", default="STATEMENTS",
                        help="the emissions' event (SALES_DISPATCH adds metadata.integration and the webhook trigger)")
    args = parser.parse_args()
    db = f"insurance_statements_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    subprocess.run(["psql", "-X", "-q", f"postgresql://{PG}/postgres", "-c", f'CREATE DATABASE "{db}"'], check=True)
    try:
        subprocess.run(["sqitch", "--chdir", str(ROOT), "deploy", f"db:pg://{PG}/{db}"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={**os.environ, "SQITCH_FULLNAME": "bench", "SQITCH_EMAIL": "bench@insurance.invalid"})
        with psycopg.connect(f"postgresql://{PG}/{db}", autocommit=True) as conn:
            pkg = conn.execute("""INSERT INTO insurance.packages (uid, name) VALUES ('st', 'St') RETURNING id""").fetchone()[0]
            conn.execute("INSERT INTO insurance.package_variants (package_id, code, name) VALUES (%s, 'travel', 'T')", (pkg,))
            ids = [r[0] for r in conn.execute(
                """INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject)
                   SELECT %s, 'st-' || n, 'travel', '{"name": "Ada", "email": "ada@example.com"}'
                     FROM generate_series(1, %s) n RETURNING id""", (pkg, args.batch)).fetchall()]
            conn.execute("""INSERT INTO outbox.http_requests (url, body)
                            SELECT 'http://127.0.0.1:9/st', '{}' FROM generate_series(1, %s)""", (args.batch,))
            specs = [{"riskItemId": i, "provider": "PROVIDER_A", "event": args.event} for i in ids]
            outcomes = [{**s, "outcome": {"status": "SUCCESS", "externalId": f"X-{s['riskItemId']}"}} for s in specs]

            notices: list[str] = []
            conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
            conn.execute("LOAD 'auto_explain'")
            for setting, value in (("log_min_duration", "0"), ("log_nested_statements", "on"),
                                   ("log_level", "notice"), ("log_format", "text")):
                conn.execute(f"SET auto_explain.{setting} = '{value}'")

            def run(name: str, sql: str, *params) -> int:
                notices.clear()
                with conn.transaction():
                    conn.execute("SELECT set_config('role', 'insurance_service', true)")
                    notices.clear()
                    conn.execute(sql, params)
                plans = [n for n in notices if "Query Text:" in n]
                nested = len(plans) - 1  # the call itself is the last one logged
                if args.show:
                    counter = collections.Counter(re.sub(r"\s+", " ", n.split("Query Text:", 1)[1].strip())[:90]
                                                  for n in plans[:-1])
                    for text, count in counter.most_common():
                        print(f"      {count:4d} x {text}")
                print(f"  {name:<28} 1 round trip, {nested:4d} statements inside")
                return nested

            print(f"one batch of {args.batch} emissions, as the pipeline runs it:")
            begin = run("integrations.begin_batch", "SELECT integrations.begin_batch(%s, 'st', 60)",
                        orjson.dumps(specs).decode())
            record_ = run("integrations.record_batch", "SELECT integrations.record_batch(%s, '{}')",
                         orjson.dumps(outcomes).decode())
            print(f"one batch of {args.batch} outbox deliveries, as the worker runs it:")
            claim = run("outbox.claim_batch", "SELECT outbox.claim_batch('st', %s, 60)", args.batch)
            ids_out = [r[0] for r in conn.execute("SELECT id FROM outbox.http_requests WHERE leased_by = 'st'")]
            deliver = run("outbox.record_deliveries", "SELECT outbox.record_deliveries('st', %s, 20)",
                          orjson.dumps([{"id": i, "status": 200} for i in ids_out]).decode())
        n = args.batch
        print(f"per emission: {(begin + record_) / n:.1f} statements in the pipeline's 2 calls "
              f"({2 / n:.2f} round trips), {(claim + deliver) / n:.1f} in the worker's 2 calls "
              f"({2 / n:.2f} round trips, plus the batch's HTTP request to the API)")
        from bench.lib import record
        record("statements", {}, **{"statements per emission, pipeline": (begin + record_) / n,
                                    "statements per delivery, worker": (claim + deliver) / n})
        return 0
    finally:
        subprocess.run(["psql", "-X", "-q", f"postgresql://{PG}/postgres", "-c",
                        f"SELECT cron.unschedule(jobid) FROM cron.job WHERE database = '{db}'"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run(["psql", "-X", "-q", f"postgresql://{PG}/postgres", "-c",
                        f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)'], stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    sys.exit(main())
