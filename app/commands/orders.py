"""`orders create --risk-item UID|ID`: record an order on a risk item (admin.create_order).

Its insert trigger enqueues the event's dispatch: POLICY_CREATED (the default) sends the
welcome mail through MAIL_PROVIDER, so that the flow can be tried from the command line.
"""
from __future__ import annotations

import argparse
import re
import uuid

from app.cli import actor, add_actor, admin, command_group, json_object_arg, print_json

_EVENT = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")


def risk_item_arg(value: str) -> tuple[int | None, str | None]:
    """A risk item's uid, or its integer id."""
    if value.isascii() and value.isdigit() and 0 < int(value) < 2**63:
        return int(value), None
    try:
        return None, str(uuid.UUID(value))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is neither a risk item uid nor its id") from None


def event_arg(value: str) -> str:
    if not _EVENT.match(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not an event such as POLICY_CREATED")
    return value


def create(args) -> int:
    item_id, item_uid = args.risk_item
    print_json(admin("admin.create_order", actor(args), item_id, item_uid, args.event,
                     args.data or {}))
    return 0


def register(subparsers) -> None:
    orders = command_group(subparsers, "orders", "record orders on risk items")
    p = orders.add_parser("create", help="record an order; POLICY_CREATED sends the welcome mail")
    p.add_argument("--risk-item", required=True, type=risk_item_arg, metavar="UID|ID")
    p.add_argument("--event", type=event_arg, default="POLICY_CREATED", help="default POLICY_CREATED")
    p.add_argument("--data", type=json_object_arg, metavar="JSON", help="the order's data (an object)")
    add_actor(p)
    p.set_defaults(func=create)
