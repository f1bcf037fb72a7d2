"""Subcommands of `python -m app` that belong to no single surface."""
from __future__ import annotations

import argparse
import re
import sys
from contextlib import contextmanager
from typing import Iterator

import orjson
import psycopg
from psycopg.rows import dict_row

from app.config import Config, ConfigError


def config_or_exit() -> Config:
    try:
        return Config.from_env()
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
    config = config or config_or_exit()
    try:
        conn = psycopg.connect(config.admin_database_url, row_factory=dict_row)
    except psycopg.OperationalError as exc:
        fail(f"cannot connect to the database: {str(exc).splitlines()[0]}")
    with conn:
        yield conn


# Argument types shared by the subcommands (argparse turns the error into exit 2).
_SLUG = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")


def slug_arg(value: str) -> str:
    """A provider slug, upper-cased: provider_a -> PROVIDER_A."""
    if not _SLUG.match(value.upper()):
        raise argparse.ArgumentTypeError(f"{value!r} is not a provider slug such as PROVIDER_A")
    return value.upper()


def json_object_arg(value: str) -> dict:
    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError:
        raise argparse.ArgumentTypeError("not valid JSON") from None
    if not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return parsed
