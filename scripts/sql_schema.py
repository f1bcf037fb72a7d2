"""sql/schema/: the schema a fresh deploy makes, one readable file per schema (never by hand).

`pg_dump --schema-only` of a deployed database, regrouped for a reader: each schema's file holds
the schema itself, its types, then every table with everything on it (comments, defaults,
constraints, indexes, row security, policies, triggers, grants), then its views and its functions,
each group sorted by name. Version banners, `SET` lines and owners (`insurance_owner` owns
everything) are left out, so that the files change only when the schema does. The files are a
picture, not a deploy script: the plan (`sqitch.plan`) builds the database.

    make schema                               a throwaway database: deploy, write sql/schema/ and
                                              docs/sql-reference.md, drop
    .venv/bin/python scripts/sql_schema.py --database-url postgresql://postgres@host/db
                                              an already deployed database (an operator's URL)
    ... --check                               write nothing; exit 1 when a file differs

tests/test_sql_schema.py fails when the committed picture is not what a fresh deploy makes.
"""
from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from scripts import sql_reference  # run as a script: scripts/ is not a package

OUTPUT = ROOT / "sql" / "schema"
COMMAND = "make schema"
OWNER = "insurance_owner"
# Extensions that the tests add to their database, not the plan (pgTAP).
NOT_DEPLOYED = {"pgtap"}
DATABASE_FILE = "database.sql"  # extensions and default privileges: what belongs to no schema

_HEADER = re.compile(r"^--\n-- (?:Data for )?Name: (.*?); Type: (.*?); Schema: (.*?); Owner: .*?\n--\n", re.MULTILINE)
_END = "\n--\n-- PostgreSQL database dump complete"
# Within a group (a table and its parts, a function and its comment and grants): the order a
# reader meets them.
PARTS = ["EXTENSION", "SCHEMA", "TYPE", "DOMAIN", "TABLE", "VIEW", "FUNCTION", "PROCEDURE", "COMMENT", "DEFAULT",
         "SEQUENCE", "SEQUENCE OWNED BY", "CONSTRAINT", "FK CONSTRAINT", "INDEX", "ROW SECURITY", "POLICY",
         "TRIGGER", "ACL", "DEFAULT ACL"]
SECTIONS = ["schema", "type", "table", "sequence", "view", "function"]


@dataclass
class Block:
    name: str     # pg_dump's: `risk_items`, `risk_items risk_items_pkey`, `FUNCTION f(x integer)`, ...
    kind: str     # pg_dump's Type: TABLE, INDEX, COMMENT, ACL, ...
    schema: str   # `-` for what belongs to no schema
    sql: str
    position: int  # in pg_dump's output


def blocks(dump: str) -> list[Block]:
    dump = dump.split(_END)[0]
    headers = list(_HEADER.finditer(dump))
    out = []
    for header, following in zip(headers, headers[1:] + [None]):
        body = dump[header.end():following.start() if following else len(dump)]
        out.append(Block(header.group(1), header.group(2), header.group(3), body, len(out)))
    return out


def _tidy(sql: str, kind: str = "") -> str:
    lines = [line for line in sql.strip("\n").splitlines()
             if not re.fullmatch(rf"ALTER .* OWNER TO {OWNER};", line)]
    if kind == "ACL":  # grants in a stable order (an ACL's order is that of its GRANTs): REVOKEs first
        lines = sorted(lines, key=lambda line: (not line.startswith("REVOKE"), line))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")


def render(dump: str) -> dict[str, str]:
    """{file name: text} of the picture, from the text of `pg_dump --schema-only`."""
    found = blocks(dump)
    views = {(b.schema, b.name) for b in found if b.kind == "VIEW"}
    tables = {(b.schema, b.name) for b in found if b.kind == "TABLE"}
    sequences: dict[tuple, str] = {}  # (schema, sequence) -> its table
    for b in found:
        if b.kind in ("SEQUENCE", "SEQUENCE OWNED BY") and \
                (m := re.search(rf"(?:ALTER TABLE (?:ONLY )?|OWNED BY ){re.escape(b.schema)}\.(\w+)", b.sql)):
            sequences[(b.schema, b.name)] = m.group(1)

    groups: dict[str, dict[tuple, list[Block]]] = {}

    def _relation(schema: str, name: str) -> str:
        return "view" if (schema, name) in views else "table" if (schema, name) in tables else "sequence"

    def put(file: str, key: tuple, block: Block) -> None:
        groups.setdefault(file, {}).setdefault(key, []).append(block)

    indexes = {(b.schema, b.name): _on_table(b) for b in found if b.kind == "INDEX"}
    for b in found:
        words = b.name.split(" ", 1)
        if (b.kind == "EXTENSION" or words[0] == "EXTENSION") and words[-1] in NOT_DEPLOYED:
            continue
        if b.kind == "EXTENSION" or words[0] == "EXTENSION":
            put(DATABASE_FILE, ("schema", words[-1]), b)
        elif b.kind == "DEFAULT ACL":
            put(DATABASE_FILE, ("schema", "~" + b.name), b)
        elif b.kind == "SCHEMA" or words[0] == "SCHEMA":
            put(f"{words[-1]}.sql", ("schema", ""), b)
        elif b.kind in ("TYPE", "DOMAIN") or words[0] in ("TYPE", "DOMAIN"):
            put(f"{b.schema}.sql", ("type", words[-1]), b)
        elif m := re.fullmatch(r"(?:CONSTRAINT|POLICY|TRIGGER) \S+ ON (DOMAIN )?(\S+)", b.name):
            put(f"{b.schema}.sql", ("type" if m.group(1) else _relation(b.schema, m.group(2)), m.group(2)), b)
        elif b.kind in ("FUNCTION", "PROCEDURE") or words[0] in ("FUNCTION", "PROCEDURE"):
            signature = words[1] if words[0] in ("FUNCTION", "PROCEDURE") else b.name
            put(f"{b.schema}.sql", ("function", signature), b)
        else:
            # A relation or its part: `t`, `t part`, `TABLE t`, `COLUMN t.c`, `SEQUENCE s`, an index.
            if b.kind == "INDEX":
                owner = indexes[(b.schema, b.name)]
            elif words[0] == "INDEX":
                owner = indexes[(b.schema, words[1])]
            elif words[0] in ("TABLE", "VIEW", "SEQUENCE", "COLUMN") and len(words) == 2:
                owner = words[1].split(".")[0]
            else:
                owner = words[0]
            owner = sequences.get((b.schema, owner), owner)
            put(f"{b.schema}.sql", (_relation(b.schema, owner), owner), b)

    files = {}
    for file, keyed in groups.items():
        schema = file.removesuffix(".sql")
        what = ("Extensions and default privileges of the database" if file == DATABASE_FILE
                else f"Schema {schema}")
        out = [f"-- {what}: what a fresh deploy makes, as pg_dump --schema-only prints it, regrouped",
               f"-- for reading. Generated by `{COMMAND}`: do not edit. Owner: {OWNER}, unless said.", ""]
        functions_seen = False
        for key in sorted(keyed, key=lambda k: (SECTIONS.index(k[0]), k[1:])):
            parts = sorted(keyed[key], key=_part_order)
            if key[0] == "function" and not functions_seen:
                functions_seen = True
                out += ["", f"-- Functions of {schema} " + "-" * max(3, 80 - len(schema) - 16), ""]
            if key[0] in ("table", "view"):
                out += ["", f"-- {key[0].capitalize()} {schema}.{key[1]} " + "-" * max(3, 80 - len(schema) - len(key[1])
                                                                                       - len(key[0]) - 6), ""]
            out += [_tidy(p.sql, p.kind) + "\n" for p in parts if _tidy(p.sql, p.kind)]
        files[file] = re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n") + "\n"
    return dict(sorted(files.items()))


def _on_table(index: Block) -> str:
    return re.search(rf"\bON (?:ONLY )?{re.escape(index.schema)}\.(\w+)", index.sql).group(1)


def _part_order(block: Block) -> tuple:
    kind = PARTS.index(block.kind) if block.kind in PARTS else len(PARTS)
    if block.kind == "COMMENT":  # the table's own first, then its columns as pg_dump lists them (in order)
        return (kind, not block.name.startswith(("TABLE ", "VIEW ")), block.position, "")
    return (kind, 0, 0, block.name)


def dump(url: str) -> str:
    return subprocess.run(["pg_dump", "--schema-only", "--exclude-schema=sqitch", "--dbname", url],
                          check=True, capture_output=True, text=True).stdout


def committed(output: Path = OUTPUT) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(output.glob("*.sql"))} if output.exists() else {}


def diff(old: dict[str, str], new: dict[str, str], limit: int = 80) -> str:
    lines: list[str] = []
    for name in sorted(set(old) | set(new)):
        lines += difflib.unified_diff(old.get(name, "").splitlines(), new.get(name, "").splitlines(),
                                      f"sql/schema/{name} (committed)", f"sql/schema/{name} (deployed)",
                                      lineterm="", n=2)
    return "\n".join(lines[:limit] + ([f"... ({len(lines) - limit} more lines)"] if len(lines) > limit else []))


def write(files: dict[str, str], output: Path = OUTPUT) -> None:
    output.mkdir(parents=True, exist_ok=True)
    for stale in set(committed(output)) - set(files):
        (output / stale).unlink()
    for name, text in files.items():
        (output / name).write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--database-url", help="an operator URL of a deployed database "
                                               "(default: deploy a throwaway one on the local cluster)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a file differs; write nothing")
    parser.add_argument("--no-reference", action="store_true",
                        help="write only sql/schema/, not docs/sql-reference.md")
    args = parser.parse_args(argv)

    os.environ.setdefault("PGOPTIONS", "-c client_min_messages=warning")  # the deploy's NOTICEs
    url = args.database_url or sql_reference._throwaway_database()
    try:
        files = render(dump(url))
        reference = None
        if not args.no_reference:
            import psycopg
            from psycopg.rows import dict_row
            with psycopg.connect(url, row_factory=dict_row) as conn:
                reference = sql_reference.generate(conn)
    finally:
        if not args.database_url:
            sql_reference._drop(url)
    old = committed()
    stale_reference = reference is not None and sql_reference.OUTPUT.read_text() != reference
    if args.check:
        if old != files or stale_reference:
            print(f"sql/schema/ or docs/sql-reference.md is out of date: run `{COMMAND}`\n{diff(old, files)}",
                  file=sys.stderr)
            return 1
        return 0
    write(files)
    if reference is not None:
        sql_reference.OUTPUT.write_text(reference)
    print(f"sql/schema/: {len(files)} files, {sum(t.count(chr(10)) for t in files.values())} lines"
          + ("; docs/sql-reference.md" if reference is not None else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
