"""`integrations set | show | use-sandbox`: provider configuration (insurance.integrations).

auth_config holds credentials: `show` masks them, and nothing here logs them.
"""
from __future__ import annotations

import argparse
import re

import orjson

from app.commands import admin_connection, json_object_arg, print_json, slug_arg

def _url(value: str) -> str:
    if not re.match(r"^https?://[^\s/]+", value):
        raise argparse.ArgumentTypeError(f"{value!r} is not an http(s) URL")
    return value.rstrip("/")


def _set(conn, slug: str, auth_config: dict) -> dict:
    return orjson.loads(conn.execute("SELECT integrations.set_provider_config(%s, %s)::text AS r",
                                     (slug, orjson.dumps(auth_config).decode())).fetchone()["r"])


def set_config(args) -> int:
    with admin_connection() as conn:
        print_json(_set(conn, args.slug, args.auth_config))
    return 0


def show(args) -> int:
    from app.orchestrator.base import mask
    with admin_connection() as conn:
        rows = conn.execute("SELECT slug, auth_config::text AS auth_config, updated_at FROM insurance.integrations "
                            "ORDER BY slug").fetchall()
    print_json([{**r, "auth_config": mask(orjson.loads(r["auth_config"]))} for r in rows])
    return 0


def use_sandbox(args) -> int:
    from app.sandbox.credentials import auth_configs
    with admin_connection() as conn:
        print_json([_set(conn, slug, config) for slug, config in auth_configs(args.url).items()])
    return 0


def register(subparsers) -> None:
    integrations = subparsers.add_parser("integrations", help="configure insurer providers").add_subparsers(
        dest="action", metavar="ACTION")
    integrations.required = True
    p = integrations.add_parser("set", help="create or replace a provider's auth_config")
    p.add_argument("slug", type=slug_arg, metavar="SLUG")
    p.add_argument("--auth-config", type=json_object_arg, required=True, metavar="JSON")
    p.set_defaults(func=set_config)
    p = integrations.add_parser("show", help="list providers (credentials masked)")
    p.set_defaults(func=show)
    p = integrations.add_parser("use-sandbox", help="point PROVIDER_A, PROVIDER_B and MAIL_PROVIDER "
                                                    "(and the identity provider) at a sandbox")
    p.add_argument("url", type=_url, metavar="URL")
    p.set_defaults(func=use_sandbox)
