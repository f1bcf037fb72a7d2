"""The command line: `python -m app <command> ...`.

Each area registers its own subcommands (see `COMMAND_MODULES`); a bad argument prints one
line on stderr and exits 2, a refused operation exits 1.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# Modules with `register(subparsers)`; each subcommand sets `func(args) -> int`.
COMMAND_MODULES = (
    "app.commands.core",
    "app.commands.packages",
    "app.gateway.commands",
    "app.sandbox.commands",
    "app.integrations.commands",
    "app.worker",
    "app.commands.users",
)


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> Parser:
    parser = Parser(prog="python -m app", description="Insurance back-end")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    subparsers.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
