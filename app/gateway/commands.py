"""`channels create | list | revoke | rotate | packages | branches`: partner channels and their API keys.

The API key is printed once, when created or rotated; the database keeps only its SHA-256.
A channel sells only the packages it is given (`--package`; `channels packages` changes them).
Each change goes through an admin.* SQL function, which writes its audit row.
"""
from __future__ import annotations

import argparse
import hashlib
import secrets

import orjson

from app.cli import actor, add_actor, admin, command_group, json_object_arg, print_json
from app.gateway import BRANCHES
API_KEY_PREFIX = "ik_"


def new_api_key() -> tuple[str, bytes]:
    key = API_KEY_PREFIX + secrets.token_urlsafe(32)
    return key, hashlib.sha256(key.encode()).digest()


def create(args) -> int:
    """One SQL call: an unknown package or a name in use refuses the whole channel, and the
    refusal stays in the audit log."""
    key, key_hash = new_api_key()
    branches = list(dict.fromkeys(args.branch or ["v1"]))
    row = admin("admin.create_channel", actor(args), args.name, branches, key_hash,
                orjson.dumps(args.ia_keys or {}).decode(), orjson.dumps(args.integration_payload or {}).decode(),
                list(dict.fromkeys(args.package or [])))
    print_json({**row, "apiKey": key})
    return 0


def branches(args) -> int:
    """Replaces the branches a channel may use; tokens of a branch taken away stop at once."""
    print_json(admin("admin.set_channel_branches", actor(args), args.id, list(dict.fromkeys(args.branch))))
    return 0


def packages(args) -> int:
    """Replaces the packages a channel may sell; the items it created keep their package."""
    print_json(admin("admin.set_channel_packages", actor(args), args.id, list(dict.fromkeys(args.package or []))))
    return 0


def list_channels(args) -> int:
    print_json(admin("admin.list_channels"))
    return 0


def revoke(args) -> int:
    print_json(admin("admin.revoke_channel", actor(args), args.id))
    return 0


def rotate(args) -> int:
    """A new key for an active channel; the old key and every token issued with it stop working
    at once (the new hash bumps the key generation that tokens carry)."""
    key, key_hash = new_api_key()
    row = admin("admin.rotate_channel_key", actor(args), args.id, key_hash)
    print_json({**row, "apiKey": key})
    return 0


def _name(value: str) -> str:
    value = value.strip()
    if not 1 <= len(value) <= 200:
        raise argparse.ArgumentTypeError("a channel name has 1 to 200 characters")
    return value


def _uuid(value: str) -> str:
    import uuid
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a channel id (a UUID)") from None


def register(subparsers) -> None:
    channels = command_group(subparsers, "channels", "manage partner channels")
    p = channels.add_parser("create", help="create a channel and print its API key once")
    p.add_argument("--name", required=True, type=_name)
    p.add_argument("--branch", action="append", choices=tuple(BRANCHES),
                   help="a gateway branch the channel may use; repeatable (default v1)")
    p.add_argument("--ia-keys", type=json_object_arg, metavar="JSON", help="AI service keys (ia branches)")
    p.add_argument("--integration-payload", type=json_object_arg, metavar="JSON",
                   help="webhooks and insurer_id (integrations branches)")
    p.add_argument("--package", action="append", metavar="UID",
                   help="a package the channel may sell; repeatable (without any, it sells none)")
    add_actor(p)
    p.set_defaults(func=create)
    p = channels.add_parser("branches", help="set the gateway branches a channel may use (replaces the list)")
    p.add_argument("--id", required=True, type=_uuid)
    p.add_argument("--branch", action="append", required=True, choices=tuple(BRANCHES),
                   help="a gateway branch the channel may use; repeatable, at least one")
    add_actor(p)
    p.set_defaults(func=branches)
    p = channels.add_parser("list", help="list channels with their branches and packages (never their keys)")
    p.set_defaults(func=list_channels)
    p = channels.add_parser("revoke", help="revoke a channel: its key and tokens stop working")
    p.add_argument("--id", required=True, type=_uuid)
    add_actor(p)
    p.set_defaults(func=revoke)
    p = channels.add_parser("rotate", help="give a channel a new API key (printed once); the old one and its tokens stop working")
    p.add_argument("--id", required=True, type=_uuid)
    add_actor(p)
    p.set_defaults(func=rotate)
    p = channels.add_parser("packages", help="set the packages a channel may sell (replaces the list)")
    p.add_argument("--id", required=True, type=_uuid)
    p.add_argument("--package", action="append", metavar="UID",
                   help="a package the channel may sell; repeatable (none: it sells nothing)")
    add_actor(p)
    p.set_defaults(func=packages)
