"""`sandbox`: serve the provider sandbox with uvicorn."""
from __future__ import annotations

from app.commands import config_or_exit


def serve(args) -> int:
    import uvicorn

    from app.sandbox.app import create_sandbox
    config = config_or_exit()
    port = args.port or config.sandbox_port
    smtp_port = args.smtp_port if args.smtp_port is not None else config.sandbox_smtp_port
    uvicorn.run(create_sandbox(smtp_port, args.host), host=args.host, port=port, loop="uvloop", http="httptools",
                access_log=False, log_level="warning", timeout_graceful_shutdown=1)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("sandbox", help="serve the provider sandbox (PROVIDER_A, PROVIDER_B, "
                                              "MAIL_PROVIDER, identity provider, chat sink)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, help="default SANDBOX_PORT (8100)")
    p.add_argument("--smtp-port", type=int, help="the mail catcher's SMTP port (SANDBOX_SMTP_PORT, 1025; 0: none)")
    p.set_defaults(func=serve)
