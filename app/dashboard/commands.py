"""`users create | list | disable | enable | password | sessions`: back-office users of the
dashboard, stored with an argon2 hash. Every change goes through an admin.* SQL function,
which writes its audit row (refusals included).

An operator who leaves, or whose cookie is stolen, is stopped at once: `disable` refuses their
login and ends every session in the same transaction, so the back-office and tRPC refuse the
cookie on its next request; `password` sets a new password (standard input) and ends their
sessions too; `sessions` lists the live ones and ends one (`--end ID`) or all (`--end-all`).
"""
from __future__ import annotations

import argparse
import getpass
import re
import sys

from app.cli import actor, add_actor, admin, command_group, fail, print_json
from app.dashboard.passwords import PASSWORD_HASHER
from app.validation import EMAIL_MAX_LENGTH, EMAIL_PATTERN

MIN_PASSWORD = 12


def _email(value: str) -> str:
    if not EMAIL_PATTERN.fullmatch(value) or len(value) > EMAIL_MAX_LENGTH:
        raise argparse.ArgumentTypeError(f"{value!r} is not an e-mail address")
    return value.lower()


def _session_id(value: str) -> str:
    if not re.fullmatch(r"[0-9a-f]{12}", value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a session id (12 hex digits, as `users sessions` lists)")
    return value


def _read_password() -> str:
    """The new password: at a terminal, asked twice without echo (a typo would lock the user out
    of an account nobody can log in to); otherwise one line of standard input. Ctrl-D or Ctrl-C
    at the prompt, or an empty input, ends the command with one line and changes nothing."""
    if sys.stdin.isatty():
        try:
            password = getpass.getpass("Password: ")
            again = getpass.getpass("Repeat the password: ")
        except (EOFError, KeyboardInterrupt):
            print(file=sys.stderr)  # the prompt's line stays open without it
            fail("cancelled: no password given, nothing was changed")
        if password != again:
            fail("the two passwords differ, nothing was changed", code=2)
        return password
    line = sys.stdin.readline()
    if not line:
        fail("no password on standard input, nothing was changed", code=2)
    return line.rstrip("\r\n")


def _new_hash() -> str:
    password = _read_password()
    if len(password) < MIN_PASSWORD:
        fail(f"the password must have at least {MIN_PASSWORD} characters (read from standard input)", code=2)
    return PASSWORD_HASHER.hash(password)


def create(args) -> int:
    print_json(admin("admin.create_dashboard_user", actor(args), args.email, _new_hash()))
    return 0


def list_users(args) -> int:
    print_json(admin("admin.list_dashboard_users"))
    return 0


def disable(args) -> int:
    print_json(admin("admin.disable_dashboard_user", actor(args), args.email))
    return 0


def enable(args) -> int:
    print_json(admin("admin.enable_dashboard_user", actor(args), args.email))
    return 0


def password(args) -> int:
    print_json(admin("admin.set_dashboard_password", actor(args), args.email, _new_hash()))
    return 0


def sessions(args) -> int:
    if args.end or args.end_all:
        print_json(admin("admin.end_dashboard_sessions", actor(args), args.email,
                         None if args.end_all else list(dict.fromkeys(args.end))))
    else:
        print_json(admin("admin.list_dashboard_sessions", args.email))
    return 0


def register(subparsers) -> None:
    users = command_group(subparsers, "users", "manage dashboard users")
    p = users.add_parser("create", help="create a dashboard user; the password is asked twice at a terminal, else read from standard input")
    p.add_argument("--email", required=True, type=_email)
    add_actor(p)
    p.set_defaults(func=create)
    p = users.add_parser("list", help="list dashboard users (never their hashes)")
    p.set_defaults(func=list_users)
    p = users.add_parser("disable", help="refuse the user's login and end every session at once")
    p.add_argument("--email", required=True, type=_email)
    add_actor(p)
    p.set_defaults(func=disable)
    p = users.add_parser("enable", help="let a disabled user log in again (their old sessions stay ended)")
    p.add_argument("--email", required=True, type=_email)
    add_actor(p)
    p.set_defaults(func=enable)
    p = users.add_parser("password", help="set a new password (read from standard input) and end every session")
    p.add_argument("--email", required=True, type=_email)
    add_actor(p)
    p.set_defaults(func=password)
    p = users.add_parser("sessions", help="list the user's live sessions; --end ID or --end-all ends them")
    p.add_argument("--email", required=True, type=_email)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--end", action="append", type=_session_id, metavar="ID",
                       help="end this session (its id as listed); repeatable")
    group.add_argument("--end-all", action="store_true", help="end every live session of the user")
    add_actor(p)
    p.set_defaults(func=sessions)
