"""The worker's commands: `worker` runs it (app/outbox/build.py builds it from the settings,
which its flags override), `outbox list [--dead] [--limit N]` and `outbox retry ID... |
--all-dead` are the operator's view of the outbox and its dead letters (rows that failed
OUTBOX_MAX_ATTEMPTS times).

list and retry call SQL functions (outbox.list_requests, outbox.retry_requests); a retry writes
its audit row (outbox.retry) naming the actor.
"""
from __future__ import annotations

import argparse
import asyncio
import signal

from app.cli import actor, add_actor, admin, command_group, config_or_exit, fail, print_json, setting_flags, with_flags
from app.logging import configure
from app.outbox.build import build_worker

# The worker's flags: each overrides its setting (WORKER_CONCURRENCY, ...), help and checks from
# its declaration in app/config.py.
WORKER_FLAGS = {
    "--concurrency": "worker_concurrency",
    "--batch": "worker_batch",
    "--dispatch-batch": "worker_dispatch_batch",
    "--poll-interval": "worker_poll_interval",
    "--lease-seconds": "worker_lease_seconds",
    "--grace-seconds": "worker_grace_seconds",
    "--metrics-port": "worker_metrics_port",
    "--metrics-host": "worker_metrics_host",
}


def worker(args) -> int:
    config = with_flags(config_or_exit(require_mode=True), args, WORKER_FLAGS)
    configure(config.log_level)
    if not config.development and "SERVICE_ROLE_SECRET" in config.generated_secrets:
        # A secret of its own would make the API refuse every delivery of this worker.
        fail("SERVICE_ROLE_SECRET is not set: a worker outside development needs the API's own", code=2)
    if config.worker_metrics_port and config.listen_problem(config.worker_metrics_host):
        fail(config.listen_problem(config.worker_metrics_host), code=2)  # test mode: loopback only, as serve

    async def main() -> None:
        async with build_worker(config) as running:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, running.stop)
            await running.run()

    try:
        import uvloop
    except ImportError:  # optional: the standard event loop does the same, a little slower
        asyncio.run(main())
    else:
        uvloop.run(main())
    return 0


def _positive(value: str) -> int:
    if not (value.isascii() and value.isdigit()) or not 0 < int(value) < 2 ** 63:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive integer")
    return int(value)


def list_rows(args) -> int:
    print_json(admin("outbox.list_requests", args.dead, args.limit))
    return 0


def retry(args) -> int:
    if not args.ids and not args.all_dead:
        fail("give outbox row ids or --all-dead", code=2)
    out = admin("outbox.retry_requests", actor(args), args.ids, args.all_dead)
    print_json(out)
    return 1 if any(r["result"] == "not_found" for r in out) else 0


def register(subparsers) -> None:
    p = subparsers.add_parser("worker", help="deliver the outbox (LISTEN outbox, claim, deliver)")
    setting_flags(p, WORKER_FLAGS)
    p.set_defaults(func=worker)
    sub = command_group(subparsers, "outbox", "list outbox rows and dead letters, put them back in the queue")
    q = sub.add_parser("list", help="undelivered rows (JSON), newest first")
    q.add_argument("--dead", action="store_true", help="dead letters only")
    q.add_argument("--limit", type=_positive, default=100, help="at most N rows (default 100)")
    q.set_defaults(func=list_rows)
    q = sub.add_parser("retry", help="put rows back in the queue, due now, attempts from 0 (audited)")
    q.add_argument("ids", nargs="*", type=_positive, metavar="ID")
    q.add_argument("--all-dead", action="store_true", help="every dead letter")
    add_actor(q)
    q.set_defaults(func=retry)
