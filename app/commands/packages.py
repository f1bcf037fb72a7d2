"""`packages create` and `packages list`, through admin.create_package / admin.list_packages.

A package needs at least one variant, each with its name, premium, currency and coverages,
so that a holder's /variants shows something real; integration slugs must name an adapter
(a typo would end every emission ABANDONED with UNKNOWN_PROVIDER).
"""
from __future__ import annotations

import argparse
import re
from decimal import Decimal, InvalidOperation

import orjson

from app.cli import actor, add_actor, admin, command_group, fail, print_json, slug_arg
from app.orchestrator.model import VARIANTS

VARIANT_FORMAT = "CODE:NAME:PREMIUM:CURRENCY:COVERAGE=LIMIT[,COVERAGE=LIMIT...]"
_COVERAGE = re.compile(r"^([A-Za-z][A-Za-z0-9_]{0,63})=([0-9]+(?:\.[0-9]{1,2})?)$")


def variant_arg(value: str) -> dict:
    """travel:Travel Basic:12.50:EUR:MEDICAL=30000,LUGGAGE=1500 -> a variant row."""
    parts = value.split(":")
    if len(parts) != 5:
        raise argparse.ArgumentTypeError(f"{value!r} is not {VARIANT_FORMAT}")
    code, name, premium, currency, coverages = (p.strip() for p in parts)
    if code not in VARIANTS:
        raise argparse.ArgumentTypeError(f"variant code {code!r} is not one of {', '.join(VARIANTS)}")
    if not 1 <= len(name) <= 200:
        raise argparse.ArgumentTypeError("a variant name has 1 to 200 characters")
    try:
        amount = Decimal(premium)
    except InvalidOperation:
        amount = Decimal(-1)
    if not amount.is_finite() or amount < 0 or amount >= 10**10 or amount.as_tuple().exponent < -2:
        raise argparse.ArgumentTypeError(f"premium {premium!r} is not an amount such as 12.50")
    if not re.fullmatch(r"[A-Z]{3}", currency):
        raise argparse.ArgumentTypeError(f"currency {currency!r} is not a code such as EUR")
    covered = [_COVERAGE.match(c.strip()) for c in coverages.split(",")]
    if not all(covered):
        raise argparse.ArgumentTypeError(f"coverages {coverages!r} are not COVERAGE=LIMIT[,COVERAGE=LIMIT...]")
    return {"code": code, "name": name, "premium": str(amount), "currency": currency,
            "coverages": [{"code": m.group(1), "limit": float(m.group(2))} for m in covered]}


def provider_arg(value: str) -> str:
    """A slug that names an adapter (`python -m app adapters list`)."""
    from app.orchestrator.registry import unknown_slug
    slug = slug_arg(value)
    problem = unknown_slug(slug)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return slug


def create(args) -> int:
    codes = [v["code"] for v in args.variant]
    if len(set(codes)) != len(codes):
        fail("each variant code may be given once", code=2)
    print_json(admin("admin.create_package", actor(args), args.uid, args.name, args.sales_integration,
                     args.post_sales_integration, orjson.dumps(args.variant).decode()))
    return 0


def list_packages(args) -> int:
    print_json(admin("admin.list_packages"))
    return 0


def _uid(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a package uid (letters, digits, _ . -; at most 64)")
    return value


def _name(value: str) -> str:
    if not 1 <= len(value) <= 200:
        raise argparse.ArgumentTypeError("a package name has 1 to 200 characters")
    return value


def register(subparsers) -> None:
    packages = command_group(subparsers, "packages", "manage packages")
    p = packages.add_parser("create", help="create a package with its variants")
    p.add_argument("--uid", required=True, type=_uid)
    p.add_argument("--name", required=True, type=_name)
    p.add_argument("--variant", action="append", required=True, type=variant_arg, metavar=VARIANT_FORMAT,
                   help=f"a product variant ({', '.join(VARIANTS)}) with its name, premium, currency and "
                        "coverages, e.g. 'travel:Travel Basic:12.50:EUR:MEDICAL=30000,LUGGAGE=1500'; "
                        "repeatable, at least one")
    from app.orchestrator.registry import ADAPTERS  # this command only: the adapters' slugs
    slugs = ", ".join(sorted(ADAPTERS))
    p.add_argument("--sales-integration", type=provider_arg, metavar="SLUG",
                   help=f"the provider each new policy is sent to: {slugs} (none: the dispatch is skipped)")
    p.add_argument("--post-sales-integration", type=provider_arg, metavar="SLUG",
                   help=f"the provider of the post-sales route and the beneficiaries sync (dashboard label "
                        f"\"Post-sales Integration\"): {slugs} (none: skipped)")
    add_actor(p)
    p.set_defaults(func=create)
    p = packages.add_parser("list", help="list packages with their variants")
    p.set_defaults(func=list_packages)
