"""`packages create` and `packages list`."""
from __future__ import annotations

import psycopg

from app.commands import admin_connection, fail, print_json, slug_arg
from app.orchestrator.model import VARIANTS


def create(args) -> int:
    with admin_connection() as conn:
        try:
            package = conn.execute(
                """INSERT INTO insurance.packages (uid, name, sales_integration_slug, post_sales_integration_slug)
                   VALUES (%s, %s, %s, %s)
                   RETURNING id, uid, name, sales_integration_slug, post_sales_integration_slug""",
                (args.uid, args.name, args.sales_integration, args.post_sales_integration),
            ).fetchone()
            for code in dict.fromkeys(args.variant or []):
                conn.execute(
                    "INSERT INTO insurance.package_variants (package_id, code, name) VALUES (%s, %s, %s)",
                    (package["id"], code, code.title()))
        except psycopg.errors.UniqueViolation:
            fail(f"a package with uid {args.uid!r} exists already")
        except psycopg.errors.CheckViolation as exc:
            fail(f"invalid value: {exc.diag.constraint_name}", code=2)
    package["variants"] = list(dict.fromkeys(args.variant or []))
    print_json(package)
    return 0


def list_packages(args) -> int:
    with admin_connection() as conn:
        rows = conn.execute(
            """SELECT p.id, p.uid, p.name, p.sales_integration_slug, p.post_sales_integration_slug,
                      coalesce(array_agg(v.code ORDER BY v.code) FILTER (WHERE v.code IS NOT NULL), '{}') AS variants
                 FROM insurance.packages p LEFT JOIN insurance.package_variants v ON v.package_id = p.id
                GROUP BY p.id ORDER BY p.id""").fetchall()
    print_json(rows)
    return 0


def register(subparsers) -> None:
    packages = subparsers.add_parser("packages", help="manage packages").add_subparsers(
        dest="action", metavar="ACTION")
    packages.required = True
    p = packages.add_parser("create", help="create a package with its variants")
    p.add_argument("--uid", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--variant", action="append", choices=VARIANTS, metavar="CODE",
                   help=f"a product variant ({', '.join(VARIANTS)}); repeatable")
    p.add_argument("--sales-integration", type=slug_arg, metavar="SLUG")
    p.add_argument("--post-sales-integration", type=slug_arg, metavar="SLUG")
    p.set_defaults(func=create)
    p = packages.add_parser("list", help="list packages")
    p.set_defaults(func=list_packages)
