"""`channels create | list | revoke | rotate | packages | branches | webhooks | webhook-secret`:
partner channels, their API keys, their webhook endpoints and secrets.

The API key is printed once, when created or rotated; the database keeps only its SHA-256.
A channel whose IntegrationPayload has `webhooks` gets a webhook signing secret (`whsec_...`),
printed once as `webhookSecret`; the database keeps only the salt it derives from
(app/webhooks.py). `webhook-secret` rotates it: for WEBHOOK_SECRET_OVERLAP both are signed with.
`webhooks` replaces a channel's endpoints, checked as at creation; a channel's first endpoints
also get its secret (printed once). Webhooks need an `integrations/*` branch, where the partner
lists and redelivers them: the database refuses them without one (WEBHOOKS_NEED_INTEGRATIONS_BRANCH).
A channel sells only the packages it is given (`--package`; `channels packages` changes them).
Each change goes through an admin.* SQL function, which writes its audit row.
"""
from __future__ import annotations

import argparse
import hashlib
import secrets

import orjson

from app.cli import (
    actor,
    add_actor,
    admin,
    admin_connection,
    call,
    command_group,
    config_or_exit,
    fail,
    json_object_arg,
    print_json,
)
from app.gateway import BRANCHES

API_KEY_PREFIX = "ik_"


def new_api_key() -> tuple[str, bytes]:
    key = API_KEY_PREFIX + secrets.token_urlsafe(32)
    return key, hashlib.sha256(key.encode()).digest()


def checked_webhooks(webhooks) -> list[dict]:
    """`webhooks` checked and normalised (app.webhooks.check_endpoints: absolute URLs, at most 5;
    outside development and test https, port 443 or 1024-65535, public addresses only); exits 2
    with the rule broken."""
    import asyncio

    from app.webhooks import EndpointError, check_endpoints
    try:
        return asyncio.run(check_endpoints(webhooks, config_or_exit().webhooks_public_only))
    except EndpointError as exc:
        fail(f"{exc.code}: {exc}", code=2)
        raise  # unreachable


def checked_payload(payload: dict | None) -> dict:
    """The IntegrationPayload with its `webhooks` checked (checked_webhooks)."""
    payload = dict(payload or {})
    if "webhooks" in payload:
        checked_webhooks(payload["webhooks"])
    return payload


def new_webhook_secret() -> tuple[str, bytes]:
    """A new webhook secret and the salt it derives from (only the salt is stored)."""
    from app.webhooks import derive_secret, new_salt
    salt = new_salt()
    return derive_secret(config_or_exit().secret("WEBHOOK_SECRET_KEY"), salt), salt


def create(args) -> int:
    """One SQL call: an unknown package or a name in use refuses the whole channel, and the
    refusal stays in the audit log. With webhooks, its secret is set in the same transaction."""
    key, key_hash = new_api_key()
    branches = list(dict.fromkeys(args.branch or ["v1"]))
    payload = checked_payload(args.integration_payload)
    secret = None
    with admin_connection() as conn:
        row = call(conn, "admin.create_channel", actor(args), args.name, branches, key_hash,
                   orjson.dumps(args.ia_keys or {}).decode(), orjson.dumps(payload).decode(),
                   list(dict.fromkeys(args.package or [])))
        if "error" not in row and payload.get("webhooks"):
            secret, salt = new_webhook_secret()
            refused = call(conn, "admin.set_webhook_secret", actor(args), row["id"], salt)
            if "error" in refused:
                conn.rollback()
                row = refused
    if "error" in row:
        fail(row["message"])
    print_json({**row, "apiKey": key, **({"webhookSecret": secret} if secret else {})})
    return 0


def webhooks(args) -> int:
    """Replaces a channel's webhook endpoints (`--set URL [EVENT ...]`, repeatable; `--none`
    removes them all), checked as at creation; audited as channels.webhooks in the same
    transaction. A channel without a secret gets one, printed once as `webhookSecret`."""
    endpoints = [] if args.none else checked_webhooks(
        [{"url": url, "events": events} if events else url for url, *events in args.set])
    secret = None
    with admin_connection() as conn:
        row = call(conn, "admin.set_channel_webhooks", actor(args), args.id, orjson.dumps(endpoints).decode())
        if "error" not in row and row.get("needsSecret"):
            secret, salt = new_webhook_secret()
            made = call(conn, "admin.set_webhook_secret", actor(args), args.id, salt)
            if "error" in made:
                conn.rollback()
                row = made
    if "error" in row:
        fail(row["message"])
    row.pop("needsSecret", None)
    print_json({**row, **({"webhookSecret": secret} if secret else {})})
    return 0


def webhook_secret(args) -> int:
    """A new webhook secret for a channel, printed once; deliveries carry both signatures for
    WEBHOOK_SECRET_OVERLAP, so the partner can switch without losing one."""
    secret, salt = new_webhook_secret()
    row = admin("admin.set_webhook_secret", actor(args), args.id, salt)
    print_json({**row, "webhookSecret": secret})
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
    p = channels.add_parser("webhooks", help="set a channel's webhook endpoints (replaces them), checked as at "
                                             "creation; the first ones print the channel's secret once")
    p.add_argument("--id", required=True, type=_uuid)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--set", action="append", nargs="+", metavar=("URL", "EVENT"),
                       help="an endpoint and, optionally, the events it takes (default every event: "
                            "emission.succeeded emission.failed emission.abandoned); repeatable, at most 5")
    which.add_argument("--none", action="store_true", help="remove every endpoint")
    add_actor(p)
    p.set_defaults(func=webhooks)
    p = channels.add_parser("webhook-secret", help="give a channel a new webhook signing secret (printed once); "
                                                   "both sign for WEBHOOK_SECRET_OVERLAP (24h)")
    p.add_argument("--id", required=True, type=_uuid)
    add_actor(p)
    p.set_defaults(func=webhook_secret)
