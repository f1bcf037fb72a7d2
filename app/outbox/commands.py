"""`outbox list [--dead] [--limit N]` and `outbox retry ID... | --all-dead`: the operator's
view of the outbox and its dead letters (rows that failed OUTBOX_MAX_ATTEMPTS times).

Both call SQL functions (outbox.list_requests, outbox.retry_requests); a retry writes its
audit row (outbox.retry) naming the actor.
"""
from __future__ import annotations

import argparse

from app.cli import actor, add_actor, admin, command_group, fail, print_json


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
