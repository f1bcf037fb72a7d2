"""Emissions per second end to end with WAL archiving (pgBackRest) off and on, rounds alternated
in one run, on a throwaway cluster of its own (the backup drill's helpers: initdb on a free port,
`backup up`), never the shared one:

    make bench-archiving            (ITEMS=1500 ROUNDS=3 by default; needs root, as the drill)

Each round restarts the cluster with archive_mode off or on, starts the API and one worker,
inserts ITEMS risk items with a holder in one transaction and times until every emission is
SUCCESS. Prints each round and the medians (docs/operations.md "Backups and restore").
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.chdir(ROOT)
from tests.test_backup import BIN, Cluster, api_on, app_cli

from app.backup import run_as_owner
from tests.conftest import free_port, running, unique
from tests.fixtures.pipeline import Stack

ITEMS = int(os.environ.get("ITEMS", "1500"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
HOLDER = '{"name": "Ada", "email": "ada@example.com"}'


def set_archiving(cluster: Cluster, on: bool) -> None:
    with cluster.admin() as conn:
        conn.execute(f"ALTER SYSTEM SET archive_mode = {'on' if on else 'off'}")
    run_as_owner([str(BIN / "pg_ctl"), "-D", str(cluster.data), "restart", "-m", "fast", "-w",
                  "-l", str(cluster.dir / "postgres.log")], starts_server=True)


def one_round(cluster: Cluster, env: dict[str, str], sandbox: str, package: int) -> tuple[float, int]:
    """Emissions per second of ITEMS items, and the WAL segments archived meanwhile."""
    with api_on(env) as api, Stack(sandbox, api, {**env, "PUBLIC_BASE_URL": api}).worker():
        time.sleep(1)
        with cluster.admin() as conn:
            archived = conn.execute("SELECT archived_count FROM pg_stat_archiver").fetchone()["archived_count"]
            started = time.monotonic()
            with conn.transaction():
                ids = [r["id"] for r in conn.execute(
                    "INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject) "
                    "SELECT %s, %s || n, 'travel', %s FROM generate_series(1, %s) n RETURNING id",
                    (package, unique("p"), HOLDER, ITEMS))]
                conn.execute("INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share) "
                             "SELECT id, 'Ada', 'ada@example.com', true, 100 FROM unnest(%s::bigint[]) id", (ids,))
            while conn.execute("SELECT count(*) AS n FROM insurance.integration_emissions "
                               "WHERE risk_item_id = ANY(%s) AND status = 'SUCCESS'", (ids,)).fetchone()["n"] < ITEMS:
                time.sleep(0.1)
            wall = time.monotonic() - started
            conn.execute("SELECT pg_switch_wal()")
            time.sleep(2)
            archived = conn.execute("SELECT archived_count FROM pg_stat_archiver").fetchone()["archived_count"] - archived
    return ITEMS / wall, archived


def main() -> int:
    cluster = Cluster()
    try:
        cluster.create()
        port = free_port()
        sandbox = f"http://127.0.0.1:{port}"
        env = cluster.env(CHAT_WEBHOOK_URL=f"{sandbox}/chat/webhook", WORKER_POLL_INTERVAL="0.2", LOG_LEVEL="warning")
        with running(["sandbox", "--port", str(port)], env, f"{sandbox}/_sandbox/health"):
            assert app_cli(env, "sandbox", "configure", sandbox).returncode == 0
            done = app_cli(env, "backup", "up")
            assert done.returncode == 0, done.stderr
            with cluster.admin() as conn:
                package = conn.execute("INSERT INTO insurance.packages (uid, name, sales_integration_slug) "
                                       "VALUES (%s, 'Bench', 'PROVIDER_A') RETURNING id", (unique("pkg"),)).fetchone()["id"]
                conn.execute("INSERT INTO insurance.package_variants (package_id, code, name) "
                             "VALUES (%s, 'travel', 'T')", (package,))
            rates: dict[str, list[float]] = {"off": [], "on": []}
            for n in range(ROUNDS):
                for mode in ("off", "on"):
                    set_archiving(cluster, mode == "on")
                    rate, segments = one_round(cluster, env, sandbox, package)
                    rates[mode].append(rate)
                    print(f"round {n + 1} archiving {mode}: {rate:.0f} emissions/s, {segments} WAL segments archived",
                          flush=True)
        for mode, found in rates.items():
            print(f"archiving {mode}: median {statistics.median(found):.0f}/s, rounds {[round(r) for r in found]}")
    finally:
        cluster.remove()
    return 0


if __name__ == "__main__":
    sys.exit(main())
