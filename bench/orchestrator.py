"""Emissions per second through the orchestrator to the provider sandbox.

    .venv/bin/python bench/orchestrator.py [--seconds 5] [--concurrency 1,16,64]
                                            [--providers PROVIDER_A,PROVIDER_B,MAIL_PROVIDER]

Makes a throwaway database (sqitch deploy), starts `python -m app sandbox` as a real process,
points the providers at it, then, for each concurrency, keeps that many
`orchestrate_insurance_emission` calls in flight (each with a new Idempotency-Key, so each is
a new policy or message) for --seconds and reports emits/s, latency percentiles and the CPU
this process spent per emit (the API's share of a provider call: adapter, httpx, transport).
`make bench-orchestrator` runs it with the defaults.
"""
from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import orjson
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.config import Config
from app.db import Database
from app.logging import configure
from app.orchestrator.service import Orchestrator
from app.sandbox.credentials import auth_configs

VARIANTS = ("travel", "health", "home", "lifestyle")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise TimeoutError(url)


def prepare_database(admin_url: str, sandbox: str) -> list[int]:
    """Configures the providers and makes one risk item per variant; their ids."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        for slug, config in auth_configs(sandbox).items():
            conn.execute("SELECT integrations.set_provider_config(%s, %s)", (slug, orjson.dumps(config).decode()))
        package_id = conn.execute("INSERT INTO insurance.packages (uid, name) VALUES (%s, 'Bench') RETURNING id",
                                  (f"bench-{uuid.uuid4().hex[:8]}",)).fetchone()[0]
        ids = []
        for variant in VARIANTS:
            conn.execute("""INSERT INTO insurance.package_variants (package_id, code, name, coverages, premium)
                            VALUES (%s, %s, %s, '[{"code": "BASIC", "limit": 1000}]', 25)""",
                         (package_id, variant, variant.title()))
            item_id = conn.execute(
                """INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject)
                   VALUES (%s, %s, %s, '{"name": "Bench Holder"}') RETURNING id""",
                (package_id, f"bench-{variant}-{uuid.uuid4().hex[:8]}", variant)).fetchone()[0]
            conn.execute("""INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
                            VALUES (%s, 'Bench Holder', 'bench@example.com', true, 100)""", (item_id,))
            ids.append(item_id)
    return ids


async def run_level(orch: Orchestrator, provider: str, items: list, concurrency: int, seconds: float) -> dict:
    latencies: list[float] = []
    failures: dict[str, int] = {}
    stop = time.perf_counter() + seconds

    async def worker(n: int) -> None:
        i = n
        while time.perf_counter() < stop:
            item = items[i % len(items)]
            i += 1
            started = time.perf_counter()
            result = await orch.orchestrate_insurance_emission(provider, item, f"bench-{uuid.uuid4()}")
            latencies.append(time.perf_counter() - started)
            if not result.ok:
                failures[result.code] = failures.get(result.code, 0) + 1

    began, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker(n) for n in range(concurrency)))
    elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
    latencies.sort()
    pct = lambda p: round(latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000, 2)
    return {"provider": provider, "concurrency": concurrency, "emits": len(latencies),
            "emits_per_s": round(len(latencies) / elapsed, 1), "p50_ms": pct(0.50), "p99_ms": pct(0.99),
            "mean_ms": round(statistics.fmean(latencies) * 1000, 2), "failures": failures,
            "cpu_us_per_emit": round(cpu / max(len(latencies), 1) * 1e6)}


async def bench(args, database_url: str, admin_url: str, sandbox: str) -> list[dict]:
    ids = prepare_database(admin_url, sandbox)
    config = dataclasses.replace(Config.from_env({**os.environ, "APP_ENV": "test"}), database_url=database_url)
    db = Database(database_url, 1, 4)
    await db.open()
    orch = Orchestrator(config, db)
    try:
        items = [await orch.standard_risk_item(i) for i in ids]
        rows = []
        for provider in args.providers:
            await run_level(orch, provider, items, 8, 0.5)  # warm: connections, token, config
            for concurrency in args.concurrency:
                rows.append(await run_level(orch, provider, items, concurrency, args.seconds))
                row = rows[-1]
                print(f"{provider:14} c={concurrency:<3} {row['emits_per_s']:>8.1f} emits/s  "
                      f"p50 {row['p50_ms']:>7.2f} ms  p99 {row['p99_ms']:>7.2f} ms  "
                      f"{row['cpu_us_per_emit']:>5} us CPU per emit (this process)  failures {row['failures']}",
                      flush=True)
        return rows
    finally:
        await orch.close()
        await db.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--concurrency", default="1,16,64")
    parser.add_argument("--providers", default="PROVIDER_A,PROVIDER_B,MAIL_PROVIDER")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    args.providers = [p.strip().upper() for p in args.providers.split(",")]
    configure("warning")

    host = os.environ.get("PGHOST", "127.0.0.1")
    port = os.environ.get("PGPORT", "5432")
    name = f"insurance_bench_{os.getpid()}"
    admin_url = f"postgresql://postgres@{host}:{port}/{name}"
    database_url = f"postgresql://insurance_app@{host}:{port}/{name}"
    env = {**os.environ, "APP_ENV": "test", "ADMIN_DATABASE_URL": admin_url, "SQITCH_FULLNAME": "bench",
           "SQITCH_EMAIL": "bench@insurance.invalid"}
    with psycopg.connect(f"postgresql://postgres@{host}:{port}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    sandbox_port = free_port()
    sandbox = subprocess.Popen([sys.executable, "-m", "app", "sandbox", "--port", str(sandbox_port)], cwd=ROOT,
                               env=env)
    try:
        subprocess.run([sys.executable, "-m", "app", "migrate"], cwd=ROOT, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{sandbox_port}"
        wait_http(f"{url}/_sandbox/health")
        print(f"orchestrator -> sandbox {url}, {args.seconds:g} s per level, {os.cpu_count()} cores", flush=True)
        rows = asyncio.run(bench(args, database_url, admin_url, url))
        from bench.lib import record
        record("orchestrator", {}, **{f"{r['provider']} c={r['concurrency']} emits/s": r["emits_per_s"] for r in rows},
               **{f"{r['provider']} c={r['concurrency']} CPU us per emit": r["cpu_us_per_emit"] for r in rows})
        if args.json:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_bytes(orjson.dumps(rows, option=orjson.OPT_INDENT_2))
    finally:
        sandbox.terminate()
        sandbox.wait(10)
        with psycopg.connect(f"postgresql://postgres@{host}:{port}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return 0


if __name__ == "__main__":
    sys.exit(main())
