"""`sandbox`: serve the provider sandbox with uvicorn; `sandbox configure URL`: point every
described insurer (app/orchestrator/insurers/*.sandbox.json) at a sandbox."""
from __future__ import annotations

import argparse
import re

from app.cli import actor, add_actor, admin, config_or_exit, fail, print_json, setting_flags, with_flags

# The sandbox's flags override its settings (help and checks from app/config.py).
SANDBOX_FLAGS = {"--port": "sandbox_port", "--smtp-port": "sandbox_smtp_port"}


def serve(args) -> int:
    import uvicorn

    from app.logging import configure
    from app.sandbox.app import create_sandbox
    config = with_flags(config_or_exit(), args, SANDBOX_FLAGS)
    configure(config.log_level)
    uvicorn.run(create_sandbox(config.sandbox_smtp_port, args.host), host=args.host, port=config.sandbox_port, loop="uvloop", http="httptools",
                access_log=False, log_level=config.log_level, timeout_graceful_shutdown=1, log_config=None)
    return 0


def configure(args) -> int:
    """Refused (exit 2, nothing written) outside development and test: in production it would
    replace the real insurers' configuration with a sandbox's, and emissions would then
    "succeed" against nothing."""
    from app.sandbox.credentials import auth_configs
    config = config_or_exit()
    if config.env not in ("development", "test"):
        fail(f"sandbox configure points every provider at a sandbox: refused with APP_ENV={config.env} "
             "(development and test only); set a real provider with `python -m app integrations set`",
             code=2)
    who = actor(args)
    print_json([admin("admin.set_integration", who, slug, config)
                for slug, config in auth_configs(args.url).items()])
    return 0


def _url(value: str) -> str:
    if not re.match(r"^https?://[^\s/]+", value):
        raise argparse.ArgumentTypeError(f"{value!r} is not an http(s) URL")
    return value.rstrip("/")


def register(subparsers) -> None:
    p = subparsers.add_parser("sandbox", help="serve the provider sandbox (every described insurer, "
                                              "their identity providers, a chat sink), or "
                                              "`sandbox configure URL` to point the providers at one")
    p.add_argument("--host", default="127.0.0.1")
    setting_flags(p, SANDBOX_FLAGS)
    p.set_defaults(func=serve)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    c = actions.add_parser("configure", help="point every described insurer (and its "
                                             "identity provider) at the sandbox served at URL")
    c.add_argument("url", type=_url, metavar="URL")
    add_actor(c)
    c.set_defaults(func=configure)
