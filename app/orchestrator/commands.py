"""`integrations set | show | delete`: provider configuration (insurance.integrations), through
the admin.* SQL functions, which write the audit rows.

A slug must name an adapter, and an auth_config must carry what that adapter needs (it is built
once, as at an emission), so that a typo is refused here instead of ending every emission
ABANDONED. auth_config holds credentials: `show` masks them, and nothing here logs them.
The sandbox's own configuration is `python -m app sandbox configure URL`.
"""
from __future__ import annotations

from app.cli import actor, add_actor, admin, command_group, fail, json_object_arg, print_json, slug_arg


def set_config(args) -> int:
    from app.orchestrator.registry import config_problem
    problem = config_problem(args.slug, args.auth_config)
    if problem is not None:
        fail(problem, code=2)
    print_json(admin("admin.set_integration", actor(args), args.slug, args.auth_config))
    return 0


def delete(args) -> int:
    print_json(admin("admin.delete_integration", actor(args), args.slug))
    return 0


def show(args) -> int:
    from app.orchestrator.base import mask
    print_json([{**r, "auth_config": mask(r["auth_config"])} for r in admin("admin.list_integrations")])
    return 0


def register(subparsers) -> None:
    integrations = command_group(subparsers, "integrations", "configure insurer providers")
    p = integrations.add_parser("set", help="create or replace a provider's auth_config (checked against its adapter)")
    p.add_argument("slug", type=slug_arg, metavar="SLUG")
    p.add_argument("--auth-config", type=json_object_arg, required=True, metavar="JSON")
    add_actor(p)
    p.set_defaults(func=set_config)
    p = integrations.add_parser("delete", help="forget a provider's configuration")
    p.add_argument("slug", type=slug_arg, metavar="SLUG")
    add_actor(p)
    p.set_defaults(func=delete)
    p = integrations.add_parser("show", help="list providers (credentials masked)")
    p.set_defaults(func=show)
