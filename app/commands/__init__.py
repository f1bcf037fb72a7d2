"""Subcommands of `python -m app` that belong to no single surface."""
from __future__ import annotations

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
