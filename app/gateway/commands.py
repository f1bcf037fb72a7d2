"""`channels create | list | revoke | rotate | packages`: partner channels and their API keys.

The API key is printed once, when created or rotated; the database keeps only its SHA-256.
A channel sells only the packages it is given (`--package`); `channels packages` changes the list.
"""
from __future__ import annotations

import argparse
import getpass
import hashlib
import secrets

import orjson
import psycopg

from app.commands import admin_connection, fail, json_object_arg, print_json

BRANCHES = ("v1", "v2", "ia/v1", "ia/v2", "integrations/v1", "integrations/v2")
API_KEY_PREFIX = "ik_"


def new_api_key() -> tuple[str, bytes]:
    key = API_KEY_PREFIX + secrets.token_urlsafe(32)
    return key, hashlib.sha256(key.encode()).digest()


def _set_packages(conn: psycopg.Connection, channel_id, package_uids: list[str]) -> list[str]:
    """The channel sells exactly these packages (insurance.set_channel_packages, audited)."""
    try:
        done = conn.execute("SELECT insurance.set_channel_packages(%s, %s, %s) AS r",
                            (f"cli:{getpass.getuser()}", channel_id, package_uids)).fetchone()["r"]
    except psycopg.Error as exc:
        if exc.sqlstate == "PT422":
            fail(f"no package with uid {', '.join(orjson.loads(exc.diag.message_hint)['packages'])}")
        if exc.sqlstate == "PT404":
            fail(f"no channel with id {channel_id}")
        raise
    return done["packages"]


def create(args) -> int:
    key, key_hash = new_api_key()
    branches = list(dict.fromkeys(args.branch or ["v1"]))
    with admin_connection() as conn:
        row = conn.execute(
            """INSERT INTO insurance.channels (name, branches, api_key_hash, ia_keys, integration_payload)
               VALUES (%s, %s, %s, %s, %s) RETURNING id, name, branches""",
            (args.name, branches, key_hash, orjson.dumps(args.ia_keys or {}).decode(),
             orjson.dumps(args.integration_payload or {}).decode()),
        ).fetchone()
        packages = _set_packages(conn, row["id"], list(dict.fromkeys(args.package or [])))
    print_json({**row, "packages": packages, "apiKey": key})
    return 0


def packages(args) -> int:
    """Replaces the packages a channel may sell; items it created keep their package."""
    with admin_connection() as conn:
        done = _set_packages(conn, args.id, list(dict.fromkeys(args.package or [])))
    print_json({"id": args.id, "packages": done})
    return 0


def list_channels(args) -> int:
    with admin_connection() as conn:
        rows = conn.execute(
            "SELECT id, name, branches, active, revoked_at, created_at FROM insurance.channels ORDER BY created_at"
        ).fetchall()
    print_json(rows)
    return 0


def revoke(args) -> int:
    with admin_connection() as conn:
        row = conn.execute(
            """UPDATE insurance.channels SET active = false, revoked_at = coalesce(revoked_at, now())
                WHERE id = %s RETURNING id, name, active, revoked_at""", (args.id,)).fetchone()
    if row is None:
        fail(f"no channel with id {args.id}")
    print_json(row)
    return 0


def rotate(args) -> int:
    """A new key for an active channel; the old key and every token issued with it stop working
    at once (the new hash bumps the key generation that tokens carry)."""
    key, key_hash = new_api_key()
    with admin_connection() as conn:
        row = conn.execute(
            """UPDATE insurance.channels SET api_key_hash = %s WHERE id = %s AND active
               RETURNING id, name, branches""", (key_hash, args.id)).fetchone()
        if row is None:
            known = conn.execute("SELECT active FROM insurance.channels WHERE id = %s", (args.id,)).fetchone()
            fail(f"channel {args.id} is revoked" if known else f"no channel with id {args.id}")
    print_json({**row, "apiKey": key})
    return 0


def _uuid(value: str) -> str:
    import uuid
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a channel id (a UUID)") from None


def register(subparsers) -> None:
    channels = subparsers.add_parser("channels", help="manage partner channels").add_subparsers(
        dest="action", metavar="ACTION")
    channels.required = True
    p = channels.add_parser("create", help="create a channel and print its API key once")
    p.add_argument("--name", required=True)
    p.add_argument("--branch", action="append", choices=BRANCHES,
                   help="a gateway branch the channel may use; repeatable (default v1)")
    p.add_argument("--ia-keys", type=json_object_arg, metavar="JSON", help="AI service keys (ia branches)")
    p.add_argument("--integration-payload", type=json_object_arg, metavar="JSON",
                   help="webhooks and insurer_id (integrations branches)")
    p.add_argument("--package", action="append", metavar="UID",
                   help="a package the channel may sell; repeatable (without any, it sells none)")
    p.set_defaults(func=create)
    p = channels.add_parser("list", help="list channels (never their keys)")
    p.set_defaults(func=list_channels)
    p = channels.add_parser("revoke", help="revoke a channel: its key and tokens stop working")
    p.add_argument("--id", required=True, type=_uuid)
    p.set_defaults(func=revoke)
    p = channels.add_parser("rotate", help="give a channel a new API key (printed once); the old one and its tokens stop working")
    p.add_argument("--id", required=True, type=_uuid)
    p.set_defaults(func=rotate)
    p = channels.add_parser("packages", help="set the packages a channel may sell (replaces the list)")
    p.add_argument("--id", required=True, type=_uuid)
    p.add_argument("--package", action="append", metavar="UID",
                   help="a package the channel may sell; repeatable (none: it sells nothing)")
    p.set_defaults(func=packages)
