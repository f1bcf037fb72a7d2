"""`sandbox`: serve the provider sandbox with uvicorn."""
from __future__ import annotations

from app.commands import config_or_exit


def serve(args) -> int:
    import uvicorn

    from app.sandbox.app import create_sandbox
    port = args.port or config_or_exit().sandbox_port
    uvicorn.run(create_sandbox(), host=args.host, port=port, loop="uvloop", http="httptools",
                access_log=False, log_level="warning", timeout_graceful_shutdown=1)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("sandbox", help="serve the provider sandbox (PROVIDER_A, PROVIDER_B, "
                                              "MAIL_PROVIDER, identity provider, chat sink)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, help="default SANDBOX_PORT (8100)")
    p.set_defaults(func=serve)
