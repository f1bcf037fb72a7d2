"""docs/sql-reference.md, generated from the catalog of a deployed database (never by hand).

Per schema: every function with the deploy file that creates it, its signature and result,
whether it runs as its owner (SECURITY DEFINER) or as its caller, the roles that may EXECUTE it,
and its COMMENT ON FUNCTION contract; then every table and view with its file, its comment, its
columns' comments, and its policies, triggers and indexes, each with the file that creates it. Functions and
tables that an extension brought (pgTAP, pgcrypto, dblink) are left out.

    make sql-reference                        a throwaway database: deploy, write, drop
    .venv/bin/python scripts/sql_reference.py --database-url postgresql://postgres@host/db
                                              an already deployed database (an operator's URL)
    ... --check                               write nothing; exit 1 when the file differs

tests/meta/test_sql_reference.py fails when the committed file is not what this writes.
"""
from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
from pathlib import Path

import psycopg
from psycopg.rows import dict_row

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from scripts.sql_files import homes  # run as a script: scripts/ is not a package

OUTPUT = ROOT / "docs" / "sql-reference.md"
COMMAND = "make sql-reference"

# Every object of these schemas is the system's or sqitch's, never the app's.
NOT_OURS = "n.nspname NOT IN ('pg_catalog', 'information_schema', 'sqitch') AND n.nspname NOT LIKE 'pg\\_%%'"
FROM_AN_EXTENSION = """EXISTS (SELECT FROM pg_catalog.pg_depend d
                        WHERE d.classid = %s::regclass AND d.objid = {oid} AND d.deptype = 'e')"""

FUNCTIONS = f"""
SELECT n.nspname AS schema, p.proname AS name,
       pg_catalog.pg_get_function_arguments(p.oid) AS arguments,
       pg_catalog.pg_get_function_identity_arguments(p.oid) AS identity,
       CASE p.prokind WHEN 'p' THEN 'procedure' ELSE pg_catalog.pg_get_function_result(p.oid) END AS result,
       p.prosecdef AS definer, pg_catalog.pg_get_userbyid(p.proowner) AS owner,
       ARRAY(SELECT CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_catalog.pg_get_userbyid(a.grantee) END
               FROM pg_catalog.aclexplode(coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner))) a
              WHERE a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner
              ORDER BY 1) AS execute,
       pg_catalog.obj_description(p.oid, 'pg_proc') AS comment
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
 WHERE {NOT_OURS} AND NOT {FROM_AN_EXTENSION.format(oid='p.oid')}
 ORDER BY 1, 2, 4
"""

TABLES = f"""
SELECT n.nspname AS schema, c.relname AS name,
       CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' ELSE 'table' END AS kind,
       pg_catalog.obj_description(c.oid, 'pg_class') AS comment,
       ARRAY(SELECT pg_catalog.format('`%%s` %%s: %%s', a.attname,
                                      pg_catalog.format_type(a.atttypid, a.atttypmod),
                                      pg_catalog.col_description(c.oid, a.attnum))
               FROM pg_catalog.pg_attribute a
              WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                AND pg_catalog.col_description(c.oid, a.attnum) IS NOT NULL
              ORDER BY a.attnum) AS columns
  FROM pg_catalog.pg_class c
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ('r', 'p', 'v', 'm') AND {NOT_OURS} AND NOT {FROM_AN_EXTENSION.format(oid='c.oid')}
 ORDER BY 1, 2
"""

# Per table: its policies, its triggers (not the internal ones of constraints) and the indexes
# made by CREATE INDEX (those of a PRIMARY KEY or UNIQUE constraint come with the table).
RULES = """
SELECT 'policy' AS kind, schemaname || '.' || tablename AS tbl, policyname AS name,
       CASE permissive WHEN 'PERMISSIVE' THEN '' ELSE 'restrictive ' END || cmd || ' to '
         || array_to_string(roles, ', ') AS what
  FROM pg_catalog.pg_policies
UNION ALL
SELECT 'trigger', n.nspname || '.' || c.relname, g.tgname,
       regexp_replace(pg_catalog.pg_get_triggerdef(g.oid), '^CREATE (CONSTRAINT )?TRIGGER \\S+ ', '')
  FROM pg_catalog.pg_trigger g JOIN pg_catalog.pg_class c ON c.oid = g.tgrelid
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
 WHERE NOT g.tgisinternal
UNION ALL
SELECT 'index', n.nspname || '.' || t.relname, i.relname,
       regexp_replace(pg_catalog.pg_get_indexdef(x.indexrelid), '^CREATE (UNIQUE )?INDEX \\S+ ON \\S+ ', '\\1')
  FROM pg_catalog.pg_index x JOIN pg_catalog.pg_class i ON i.oid = x.indexrelid
  JOIN pg_catalog.pg_class t ON t.oid = x.indrelid JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
 WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_constraint k WHERE k.conindid = x.indexrelid)
 ORDER BY 1, 2, 3
"""

SCHEMAS = "SELECT nspname AS name, pg_catalog.obj_description(oid, 'pg_namespace') AS comment FROM pg_catalog.pg_namespace"


def cell(text: str | None) -> str:
    """One line of a Markdown table cell."""
    return " ".join((text or "").split()).replace("|", "\\|")


def generate(conn: psycopg.Connection) -> str:
    functions = conn.execute(FUNCTIONS, ("pg_catalog.pg_proc",)).fetchall()
    tables = conn.execute(TABLES, ("pg_catalog.pg_class",)).fetchall()
    schema_comments = {r["name"]: r["comment"] for r in conn.execute(SCHEMAS)}
    rules = conn.execute(RULES).fetchall()
    where = homes()

    def file(*key: str) -> str:
        paths = where.get(tuple(k.lower() for k in key))
        return ", ".join(f"`{p}`" for p in paths) if paths else "_(no deploy file of the plan)_"

    schemas = sorted({r["schema"] for r in functions} | {r["schema"] for r in tables})

    out = [
        "# SQL reference",
        "",
        f"Generated from the catalog of a freshly deployed database by `{COMMAND}`: do not edit",
        "by hand. \"File\" is the deploy file that creates an object (CONTRIBUTING, \"SQL\", says",
        "where each kind lives). Every function's contract is its `COMMENT ON FUNCTION` there; \"runs as\" says whether it runs with its owner's",
        "rights (SECURITY DEFINER) or its caller's; \"EXECUTE\" lists the roles granted it besides",
        "its owner. `insurance_app` is the login: it names a function before the statement's role",
        "switch, so an entry point grants EXECUTE to it and to its surface role (app/db.py).",
        "",
        "Schemas: " + ", ".join(f"[{s}](#{s})" for s in schemas) + ".",
    ]
    for schema in schemas:
        out += ["", f"## {schema}", ""]
        if schema_comments.get(schema):
            out += [cell(schema_comments[schema]), ""]
        mine = [f for f in functions if f["schema"] == schema]
        if mine:
            out += ["### Functions", "",
                    "| Function | Returns | Runs as | EXECUTE | File | Contract |",
                    "|---|---|---|---|---|---|"]
            for f in mine:
                runs_as = f"owner ({f['owner']}), SECURITY DEFINER" if f["definer"] else "caller"
                contract = cell(f["comment"]) or "_(no contract: COMMENT ON FUNCTION is missing)_"
                out.append(f"| `{f['schema']}.{f['name']}({cell(f['arguments'])})` | `{cell(f['result'])}` "
                           f"| {runs_as} | {', '.join(f['execute']) or '(owner only)'} "
                           f"| {file('function', f['schema'] + '.' + f['name'])} | {contract} |")
            out.append("")
        mine = [t for t in tables if t["schema"] == schema]
        if mine:
            out += ["### Tables and views", ""]
            for t in mine:
                kind = "" if t["kind"] == "table" else f" ({t['kind']})"
                qualified = f"{t['schema']}.{t['name']}"
                made_by = f" ({file('table', qualified)})" if t["kind"] == "table" else ""
                out.append(f"- `{qualified}`{kind}{made_by}: {cell(t['comment']) or '_(no comment)_'}")
                out += [f"  - {cell(c)}" for c in t["columns"]]
                for r in (r for r in rules if r["tbl"] == qualified):
                    out.append(f"  - {r['kind']} `{r['name']}` ({file(r['kind'], r['name'], qualified)}): "
                               f"{cell(r['what'])}")
            out.append("")
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).rstrip("\n") + "\n"


def diff(committed: str, generated: str, limit: int = 60) -> str:
    lines = list(difflib.unified_diff(committed.splitlines(), generated.splitlines(),
                                      "docs/sql-reference.md (committed)", "generated", lineterm="", n=1))
    return "\n".join(lines[:limit] + ([f"... ({len(lines) - limit} more lines)"] if len(lines) > limit else []))


def _throwaway_database() -> str:
    """Deploy the plan into a new database of the local cluster; its operator URL."""
    host, port = os.environ.get("PGHOST", "127.0.0.1"), os.environ.get("PGPORT", "5432")
    name = f"sql_reference_{os.getpid()}"
    with psycopg.connect(f"postgresql://postgres@{host}:{port}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    env = {"SQITCH_FULLNAME": "sql-reference", "SQITCH_EMAIL": "sql-reference@insurance.invalid", **os.environ}
    subprocess.run(["sqitch", "--chdir", str(ROOT), "deploy", f"db:pg://postgres@{host}:{port}/{name}"],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    return f"postgresql://postgres@{host}:{port}/{name}"


def _drop(url: str) -> None:
    base, name = url.rsplit("/", 1)
    cron_db = os.environ.get("CRON_DATABASE", "postgres")
    with psycopg.connect(f"{base}/{cron_db}", autocommit=True) as conn:
        try:  # the deploy registered its pg_cron jobs for this database
            conn.execute("SELECT cron.unschedule(jobid) FROM cron.job WHERE database = %s", (name,))
        except psycopg.Error:
            pass
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--database-url", help="an operator URL of a deployed database "
                                               "(default: deploy a throwaway one on the local cluster)")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--check", action="store_true", help="exit 1 when the file differs; write nothing")
    args = parser.parse_args(argv)

    url = args.database_url or _throwaway_database()
    try:
        with psycopg.connect(url, row_factory=dict_row) as conn:
            text = generate(conn)
    finally:
        if not args.database_url:
            _drop(url)
    committed = args.output.read_text() if args.output.exists() else ""
    if args.check:
        if committed != text:
            print(f"{args.output} is out of date: run `{COMMAND}`\n{diff(committed, text)}", file=sys.stderr)
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(f"{args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output}: "
          f"{text.count(chr(10))} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
