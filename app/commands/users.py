"""`users create --email E` (the password is read from standard input) and `users list`:
back-office users of the dashboard, stored with an argon2 hash."""
from __future__ import annotations

import argparse
import getpass
import sys

import psycopg

from app.commands import admin_connection, fail, print_json
from app.trpc.passwords import PASSWORD_HASHER
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
    password_hash = PASSWORD_HASHER.hash(password)
    with admin_connection() as conn:
        try:
            row = conn.execute(
                """INSERT INTO insurance.dashboard_users (email, password_hash) VALUES (%s, %s)
                   RETURNING id, email, active, created_at""", (args.email, password_hash)).fetchone()
        except psycopg.errors.UniqueViolation:
            fail(f"a dashboard user with e-mail {args.email} exists already")
    print_json(row)
    return 0


def list_users(args) -> int:
    with admin_connection() as conn:
        rows = conn.execute(
            """SELECT u.id, u.email, u.active, u.created_at,
                      count(s.*) FILTER (WHERE s.revoked_at IS NULL AND s.expires_at > now()) AS live_sessions
                 FROM insurance.dashboard_users u LEFT JOIN insurance.dashboard_sessions s ON s.user_id = u.id
                GROUP BY u.id ORDER BY u.id""").fetchall()
    print_json(rows)
    return 0


def register(subparsers) -> None:
    users = subparsers.add_parser("users", help="manage dashboard users").add_subparsers(
        dest="action", metavar="ACTION")
    users.required = True
    p = users.add_parser("create", help="create a dashboard user; the password is read from standard input")
    p.add_argument("--email", required=True, type=_email)
    p.set_defaults(func=create)
    p = users.add_parser("list", help="list dashboard users (never their hashes)")
    p.set_defaults(func=list_users)
