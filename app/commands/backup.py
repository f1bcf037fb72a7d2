"""`python -m app backup up|now|status|restore|recover-rows`: continuous backups on pgBackRest
and the ways back (app/backup.py; docs/operations.md "Backups and restore").

The cluster is the one ADMIN_DATABASE_URL reaches. `up` restarts it once (announced on a line
before) when archiving was off; nothing else restarts or reconfigures it.
"""
from __future__ import annotations

import argparse
import uuid
from pathlib import Path

from app.cli import command_group, config_or_exit, fail, print_json


def _port(value: str) -> int:
    if not (value.isascii() and value.isdigit()) or not 1024 <= int(value) <= 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port from 1024 to 65535")
    return int(value)


def _moment(value: str):
    from app.backup import parse_time
    try:
        return parse_time(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an ISO 8601 time such as 2026-11-29T10:41:07Z") from None


def _uuid(value: str) -> str:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a channel id (a UUID)") from None


def _guarded(action):
    def run(args) -> int:
        from app.backup import BackupError
        try:
            return action(args)
        except BackupError as exc:
            fail(str(exc))
            return 1
    return run


@_guarded
def up(args) -> int:
    from app import backup
    print_json(backup.up(config_or_exit()))
    return 0


@_guarded
def now(args) -> int:
    from app import backup
    print_json(backup.now(config_or_exit(), args.type))
    return 0


@_guarded
def status(args) -> int:
    from app import backup
    report, problems = backup.status(config_or_exit())
    print_json(report)
    return 1 if problems else 0


@_guarded
def restore(args) -> int:
    from app import backup
    done = backup.restore(config_or_exit(), args.time, Path(args.to), args.port)
    backup.say(f"restored to {done['target']} in {done['total_seconds']} s (pgBackRest {done['restore_seconds']} s); "
               f"the copy's database: {done['database_bytes']} bytes. Stop it with: pg_ctl -D {done['data_directory']} "
               "stop (as postgres)")
    print(done["url"])
    return 0


@_guarded
def recover_rows(args) -> int:
    from app import recover
    print_json(recover.recover_channel(config_or_exit(), args.source, args.channel))
    return 0


def register(subparsers) -> None:
    sub = command_group(subparsers, "backup", "continuous backups (pgBackRest), point-in-time restore, lost rows")
    q = sub.add_parser("up", help="archive WAL and take a first full backup of the ADMIN_DATABASE_URL cluster "
                                  "(one restart, announced; idempotent)")
    q.set_defaults(func=up)
    q = sub.add_parser("now", help="take a backup now")
    q.add_argument("--type", choices=("full", "diff", "incr"), default="full", help="default full")
    q.set_defaults(func=now)
    q = sub.add_parser("status", help="backups and archiving as JSON; exit 1 when the newest backup is older than "
                                      "BACKUP_MAX_AGE or archiving has failed since its last success")
    q.set_defaults(func=status)
    q = sub.add_parser("restore", help="a side copy at a point in time in a new folder, started on PORT "
                                       "(never over the live cluster); prints its URL")
    q.add_argument("--time", required=True, type=_moment, metavar="ISO8601", help="the target; no offset: UTC")
    q.add_argument("--to", required=True, metavar="DIR", help="a new or empty folder")
    q.add_argument("--port", required=True, type=_port)
    q.set_defaults(func=restore)
    q = sub.add_parser("recover-rows", help="a channel's risk items and what hangs from them, from a side copy "
                                            "back into the live database with their ids (rows already there are "
                                            "left alone)")
    q.add_argument("--from", dest="source", required=True, metavar="URL", help="the side copy's database URL "
                                                                              "(what `restore` printed)")
    q.add_argument("--channel", required=True, type=_uuid, metavar="ID")
    q.set_defaults(func=recover_rows)
