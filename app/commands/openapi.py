"""`python -m app openapi [partner|holder|internal]`: a served OpenAPI document (with a relative
server); `python -m app openapi --error-table`: docs/api.md's table of the error codes."""
from __future__ import annotations

import sys

from app import gateway, openapi


def register(subparsers) -> None:
    p = subparsers.add_parser("openapi", help="print an OpenAPI document, or the error-code table")
    p.add_argument("audience", nargs="?", choices=openapi.AUDIENCES, help="one audience's document (default: all)")
    p.add_argument("--error-table", action="store_true", help="docs/api.md's table of app/errors.py CODES")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.error_table:
        sys.stdout.write(openapi.error_table())
        return 0
    sys.stdout.buffer.write(openapi.OpenApi(gateway.document_branches()).body(args.audience) + b"\n")
    return 0
