"""What every command of `python -m app` shares: configuration, errors, output, the
operator's database connection and the admin.* SQL functions, the --actor of audit rows,
and argument types. Each command lives beside what it serves (a surface, the orchestrator,
the sandbox); app/commands/ holds those that belong to no single one.
"""
from __future__ import annotations

import argparse
import dataclasses
import getpass
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import orjson

from app.config import Config, ConfigError, Setting, declared

if TYPE_CHECKING:
    import psycopg


class Parser(argparse.ArgumentParser):
    """Every parser of the command line: one-line errors (exit 2), and no abbreviated flags
    (`--nam foo` once created a channel called "foo")."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def setting_flags(parser: argparse.ArgumentParser, flags: dict[str, str]) -> None:
    """A flag per setting ({"--batch": "worker_batch"}) that overrides its variable: read as the
    variable is (the same checks), its help the setting's own doc, variable and default, so a
    setting is described once (app/config.py) for the environment, the documents and the flags."""
    settings = declared()
    for flag, field in flags.items():
        item = settings[field]
        default = item.shown or f"`{item.default}`"
        parser.add_argument(flag, dest=field, default=None, type=_setting_type(item), metavar=item.name,
                            help=f"{item.doc} (default {default})".replace("%", "%%"))


def _setting_type(item: Setting):
    def read(raw: str) -> Any:
        try:
            return item.kind(item.name, raw)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc).replace(f"{item.name}=", "")) from None
    read.__name__ = item.name
    return read


def with_flags(config: Config, args: argparse.Namespace, flags: dict[str, str]) -> Config:
    """`config` with the settings the command line gave (setting_flags) in place of the environment's."""
    given = {field: getattr(args, field) for field in flags.values() if getattr(args, field, None) is not None}
    return dataclasses.replace(config, **given)


def config_or_exit(require_mode: bool = False) -> Config:
    """The configuration, or exit 2 with its one-line problem. No command guesses APP_ENV:
    `require_mode` words the refusal for the servers (`serve`, `worker`); any other command is
    refused as well (guessed, development would save a loopback webhook, or sign with secrets
    drawn into a development file on a production host)."""
    if not require_mode and not os.environ.get("APP_ENV"):
        fail("APP_ENV is not set: the command line runs only in an explicit mode, as serve and worker do "
             "(APP_ENV=production in a deployment; APP_ENV=development on a developer's machine)", code=2)
    try:
        return Config.from_env(require_mode=require_mode)
    except ConfigError as exc:
        fail(str(exc), code=2)
        raise  # unreachable


def fail(message: str, code: int = 1) -> None:
    print(f"python -m app: error: {message}", file=sys.stderr)
    sys.exit(code)


def print_json(value: object) -> None:
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2, default=str).decode() + "\n")


@contextmanager
def admin_connection(config: Config | None = None) -> Iterator[psycopg.Connection]:
    """A psycopg connection as the operator (ADMIN_DATABASE_URL), committed on success."""
    import psycopg  # only for the commands that need it (not the worker, not serve)
    from psycopg.rows import dict_row

    config = config or config_or_exit()
    try:
        conn = psycopg.connect(config.admin_database_url, row_factory=dict_row)
    except psycopg.OperationalError as exc:
        fail(f"cannot connect to the database: {str(exc).splitlines()[0]}")
    with conn:
        yield conn


# What the audit rows of this command say besides the actor (the OS user): how it came
# (`cli`) and the --actor given, if any (app/db.py call_admin hands both to SQL).
_AUDIT: dict[str, str | None] = {"via": "cli", "on_behalf_of": None}


def call(conn, function: str, *args: Any) -> Any:
    """`function(*args)` on an admin connection, its audit rows marked as this command's."""
    from app.db import call_admin

    return call_admin(conn, function, *args, audit=_AUDIT)


def admin(function: str, *args: Any) -> Any:
    """`function(*args)`, one of the admin.* SQL functions, in a transaction of its own. A refusal
    ({"error": CODE, "message"}: the audit row is written) exits 1 with its message."""
    with admin_connection() as conn:
        value = call(conn, function, *args)
    refused(value)
    return value


def refused(value: Any) -> None:
    """Exit 1 with the message of an admin.* refusal ({"error": CODE, "message"})."""
    if isinstance(value, dict) and "error" in value and "message" in value:
        fail(value["message"])


def command_group(subparsers, name: str, help: str):
    """The ACTION subparsers of `python -m app NAME ACTION ...`; an ACTION is required."""
    return subparsers.add_parser(name, help=help).add_subparsers(dest="action", metavar="ACTION", required=True)


def add_actor(parser: argparse.ArgumentParser) -> None:
    """--actor of a command that changes something: on whose behalf, recorded beside the OS user."""
    parser.add_argument("--actor", type=_actor, default=None,
                        help="on whose behalf (a ticket, a colleague): the audit row keeps it beside the OS user")


def actor(args: argparse.Namespace) -> str:
    """'cli:<OS user>' (its uid where it has no name, as in some containers): who ran the
    command, whatever --actor says; --actor is kept beside it (on_behalf_of)."""
    _AUDIT["on_behalf_of"] = getattr(args, "actor", None)
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return f"cli:uid-{os.getuid()}"


def _actor(value: str) -> str:
    if not 1 <= len(value) <= 200 or not value.isprintable():
        raise argparse.ArgumentTypeError("an actor is 1 to 200 printable characters")
    return value


# Argument types shared by the subcommands (argparse turns the error into exit 2).
_SLUG = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")


def slug_arg(value: str) -> str:
    """A provider slug, upper-cased: provider_a -> PROVIDER_A."""
    if not _SLUG.match(value.upper()):
        raise argparse.ArgumentTypeError(f"{value!r} is not a provider slug such as PROVIDER_A")
    return value.upper()


def json_object_arg(value: str) -> dict:
    from app.validation import MAX_JSON_DEPTH, nests_deeper  # the API's limit (docs/api.md)
    if nests_deeper(value.encode(errors="surrogatepass")):
        raise argparse.ArgumentTypeError(f"nests deeper than {MAX_JSON_DEPTH} levels")
    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError:
        raise argparse.ArgumentTypeError("not valid JSON") from None
    if not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return parsed
