"""`users create --email E` (the password is read from standard input) and `users list`:
back-office users of the dashboard, stored with an argon2 hash (admin.create_dashboard_user)."""
from __future__ import annotations

import argparse
import getpass
import sys

from app.cli import actor, add_actor, admin, command_group, fail, print_json
from app.dashboard.passwords import PASSWORD_HASHER
from app.validation import EMAIL_MAX_LENGTH, EMAIL_PATTERN

MIN_PASSWORD = 12


def _email(value: str) -> str:
    if not EMAIL_PATTERN.fullmatch(value) or len(value) > EMAIL_MAX_LENGTH:
        raise argparse.ArgumentTypeError(f"{value!r} is not an e-mail address")
    return value.lower()


def _read_password() -> str:
    """One line of standard input (a prompt without echo when it is a terminal)."""
    if sys.stdin.isatty():
        return getpass.getpass("Password: ")
    return sys.stdin.readline().rstrip("\r\n")


def create(args) -> int:
    password = _read_password()
    if len(password) < MIN_PASSWORD:
        fail(f"the password must have at least {MIN_PASSWORD} characters (read from standard input)", code=2)
    print_json(admin("admin.create_dashboard_user", actor(args), args.email, PASSWORD_HASHER.hash(password)))
    return 0


def list_users(args) -> int:
    print_json(admin("admin.list_dashboard_users"))
    return 0


def register(subparsers) -> None:
    users = command_group(subparsers, "users", "manage dashboard users")
    p = users.add_parser("create", help="create a dashboard user; the password is read from standard input")
    p.add_argument("--email", required=True, type=_email)
    add_actor(p)
    p.set_defaults(func=create)
    p = users.add_parser("list", help="list dashboard users (never their hashes)")
    p.set_defaults(func=list_users)
