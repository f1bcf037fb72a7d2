"""The command line: `python -m app <command> ...`.

Each area registers its own subcommands (see `COMMANDS`); a bad argument prints one line on
stderr and exits 2, a refused operation exits 1. Only the module of the command being run is
imported, so that `worker` does not carry the HTTP app's libraries in its memory.
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

VENV = Path(__file__).resolve().parents[1] / ".venv"


def _outside_the_environment(missing: ModuleNotFoundError) -> None:
    """A library missing because this is not the project's interpreter (the system `python3`):
    one line saying which one to use, not a traceback. Inside the environment, the error as is."""
    if (missing.name or "app").split(".")[0] == "app" or Path(sys.prefix).resolve() == VENV.resolve():
        raise missing
    sys.exit(f"python -m app runs in the project's environment ({missing.name} is not installed for "
             f"{sys.executable}): use .venv/bin/python -m app {' '.join(sys.argv[1:])}".rstrip()
             + " (make setup creates .venv)")

# structlog looks for rich (pretty console tracebacks) and greenlet when they are installed:
# in a development venv the test tools bring them (schemathesis, playwright). Our processes
# log JSON and run no greenlets, so they do not load them: about 6 MB of each API and worker
# process (docs/benchmarks.md "Memory"). The tests, which import the app themselves, keep them.
for _optional in ("rich", "greenlet"):
    sys.modules.setdefault(_optional, None)

try:
    from app.cli import Parser
except ModuleNotFoundError as _missing:
    _outside_the_environment(_missing)

# Command -> the module whose `register(subparsers)` adds it; each sets `func(args) -> int`.
COMMANDS = {
    "serve": "app.commands.core",
    "migrate": "app.commands.core",
    "packages": "app.commands.packages",
    "orders": "app.commands.orders",
    "channels": "app.gateway.commands",
    "sandbox": "app.sandbox.commands",
    "integrations": "app.orchestrator.commands",
    "adapters": "app.orchestrator.scaffold",
    "worker": "app.outbox.commands",
    "outbox": "app.outbox.commands",
    "providers": "app.commands.providers",
    "users": "app.dashboard.commands",
    "people": "app.commands.people",
    "audit": "app.commands.people",
    "openapi": "app.commands.openapi",
    "settings": "app.commands.settings",
    "backup": "app.commands.backup",
}


def build_parser(command: str | None = None) -> Parser:
    """The parser for `command` alone, or for every command (help, or an unknown one)."""
    parser = Parser(prog="python -m app", description="Insurance back-end")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    subparsers.required = True
    modules = [COMMANDS[command]] if command in COMMANDS else COMMANDS.values()
    for name in dict.fromkeys(modules):
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv[0] if argv else None).parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ModuleNotFoundError as missing:  # a command's own libraries, imported when it runs
        _outside_the_environment(missing)
