"""`providers pause PROVIDER [--until TIME]`, `providers resume PROVIDER` and `providers list`: an
insurer's maintenance window or outage. While paused, its emissions wait without spending
attempts (the claim and the retry sweep skip it); resuming, by hand or at --until, sends them.

Each calls one admin.* SQL function, which writes the audit row (providers.pause,
providers.resume) naming the actor.
"""
from __future__ import annotations

import argparse
import datetime

from app.cli import actor, add_actor, admin, command_group, print_json, slug_arg


def until_arg(value: str) -> datetime.datetime:
    """An ISO 8601 time (2026-12-01T06:00, UTC unless it names its offset) or a duration from now
    (90m, 2h, 1d)."""
    units = {"m": "minutes", "h": "hours", "d": "days"}
    if value[-1:] in units and value[:-1].isascii() and value[:-1].isdigit() and 0 < int(value[:-1]) <= 10_000:
        return datetime.datetime.now(datetime.UTC) + datetime.timedelta(**{units[value[-1]]: int(value[:-1])})
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is neither a time (2026-12-01T06:00) nor a duration (90m, 2h, 1d)") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


def pause(args) -> int:
    print_json(admin("admin.pause_provider", actor(args), args.provider, args.until))
    return 0


def resume(args) -> int:
    print_json(admin("admin.resume_provider", actor(args), args.provider))
    return 0


def list_pauses(args) -> int:
    print_json(admin("admin.list_provider_pauses"))
    return 0


def register(subparsers) -> None:
    sub = command_group(subparsers, "providers", "pause and resume an insurer (its emissions wait without spending attempts)")
    q = sub.add_parser("pause", help="pause a provider: its emissions wait, no attempt spent (audited)")
    q.add_argument("provider", type=slug_arg, metavar="PROVIDER")
    q.add_argument("--until", type=until_arg, default=None, metavar="TIME",
                   help="resume by itself then: a time (2026-12-01T06:00, UTC) or a duration (90m, 2h, 1d); "
                        "default: until `providers resume`")
    add_actor(q)
    q.set_defaults(func=pause)
    q = sub.add_parser("resume", help="resume a paused provider: its waiting emissions are sent now (audited)")
    q.add_argument("provider", type=slug_arg, metavar="PROVIDER")
    add_actor(q)
    q.set_defaults(func=resume)
    q = sub.add_parser("list", help="the pauses in force (JSON)")
    q.set_defaults(func=list_pauses)
