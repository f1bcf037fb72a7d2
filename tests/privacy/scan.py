"""The scan that keeps the map of personal data (insurance.personal_data) true: where in the
database do given values (a person's e-mail, a document number) appear, and which of those
places does the map not name?

A place is (relation, column, JSON path): the path is '' for the column's own value, else the
path of every JSON string containing the value, with [*] for any array element. A map row with
the path '' names the whole column (every path inside it).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

# The schemas that hold the service's tables.
SCHEMAS = ("insurance", "outbox", "webhooks")
# Column types a person's e-mail or document number can be stored in.
TEXT_TYPES = ("text", "character varying", "character", "json", "jsonb", "inet", "text[]", "jsonb[]")

Place = tuple[str, str, str]


def _paths(value: Any, needles: tuple[str, ...], path: str = "$") -> Iterable[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, needles, f"{path}.{key}")
    elif isinstance(value, list):
        for item in value:
            yield from _paths(item, needles, f"{path}[*]")
    elif isinstance(value, str) and any(n in value.lower() for n in needles):
        yield path


def _columns(conn) -> list[dict]:
    return conn.execute(
        """SELECT n.nspname AS schema, c.relname AS table, a.attname AS column,
                  pg_catalog.format_type(coalesce(NULLIF(t.typbasetype, 0), a.atttypid), NULL) AS type
             FROM pg_catalog.pg_attribute a
             JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
             JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
            WHERE c.relkind IN ('r', 'p') AND n.nspname = ANY (%s) AND a.attnum > 0 AND NOT a.attisdropped
            ORDER BY 1, 2, a.attnum""", (list(SCHEMAS),)).fetchall()


def places(conn, needles: Iterable[str]) -> set[Place]:
    """Every place (relation, column, path) where one of `needles` appears (case-insensitive)."""
    needles = tuple(n.lower() for n in needles)
    found: set[Place] = set()
    for col in _columns(conn):
        if col["type"] not in TEXT_TYPES:
            continue
        relation = f"{col['schema']}.{col['table']}"
        ident = f'"{col["schema"]}"."{col["table"]}"'
        rows = conn.execute(f'SELECT "{col["column"]}"::text AS v FROM {ident} '
                            f'WHERE EXISTS (SELECT FROM unnest(%s::text[]) n WHERE strpos(lower("{col["column"]}"::text), n) > 0)',
                            (list(needles),)).fetchall()
        for row in rows:
            if col["type"] in ("json", "jsonb", "jsonb[]"):
                paths = set(_paths(orjson.loads(row["v"]), needles)) if col["type"] != "jsonb[]" else {""}
                found |= {(relation, col["column"], p) for p in paths}
            else:
                found.add((relation, col["column"], ""))
    return found


def declared(conn) -> set[Place]:
    return {(r["relation"], r["column_name"], r["json_path"])
            for r in conn.execute("SELECT relation, column_name, json_path FROM insurance.personal_data").fetchall()}


def undeclared(conn, needles: Iterable[str]) -> set[Place]:
    """The places holding one of `needles` that the map does not name."""
    known = declared(conn)
    return {p for p in places(conn, needles) if p not in known and (p[0], p[1], "") not in known}
