"""One home and a contract for every SQL function, read from sqitch.plan, sql/ and the catalog.

A DBA opens `sql/deploy/<change>.sql` by a function's name and finds all of it there (CONTRIBUTING,
"SQL"). So, for every function of the deployed database that no extension brought (whatever its
schema):

- exactly one deploy file of a change in the plan creates it; a rework's frozen copy
  (`name@tag.sql`) does not count, so a function that lives only there has no home;
- it carries a non-empty `COMMENT ON FUNCTION`, its one-line contract;
- the revert of the change that creates it drops it (or drops its schema with CASCADE).

The files are read as PostgreSQL reads them: strings, dollar-quoted bodies and comments are
skipped, so only top-level CREATE and DROP statements count (a function made by dynamic SQL in
a DO block has no home here either). Argument types are resolved by the database itself
(`to_regtype`), so `int` and `integer`, `timestamptz` and `timestamp with time zone` agree.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest

from scripts.sql_files import masked
from tests.conftest import ROOT

SQL = ROOT / "sql"


# ------------------------------------------------------------------ reading SQL files

def split_top_level(text: str, sep: str = ",") -> list[str]:
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def closing_paren(text: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced parentheses")


NAME = r'(?:"[^"]+"|[A-Za-z_][A-Za-z_0-9$]*)'
QUALIFIED = rf"({NAME}(?:\s*\.\s*{NAME})?)"
CREATE = re.compile(rf"\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|PROCEDURE)\s+{QUALIFIED}\s*\(", re.I)
DROP = re.compile(r"\bDROP\s+(?:FUNCTION|PROCEDURE|ROUTINE)\s+(?:IF\s+EXISTS\s+)?", re.I)
DROP_SCHEMA = re.compile(rf"\bDROP\s+SCHEMA\s+(?:IF\s+EXISTS\s+)?({NAME}(?:\s*,\s*{NAME})*)\s+CASCADE\b", re.I)
MODES = ("IN", "OUT", "INOUT", "VARIADIC")


def identifier(name: str) -> str:
    name = name.strip()
    return name[1:-1] if name.startswith('"') else name.lower()


def qualified(name: str) -> tuple[str, str]:
    parts = [identifier(p) for p in re.split(r"\s*\.\s*", name.strip())]
    return ("public", parts[0]) if len(parts) == 1 else (parts[0], parts[1])


def argument_types(arglist: str) -> list[str]:
    """The input argument declarations of a CREATE/DROP FUNCTION argument list, each as written
    without its mode and default (OUT arguments are no part of a function's identity)."""
    found = []
    for arg in split_top_level(arglist):
        arg = re.split(r"\s+DEFAULT\b|\s*=", arg, maxsplit=1, flags=re.I)[0].strip()
        first = arg.split(None, 1)
        if first and first[0].upper() in MODES:
            if first[0].upper() == "OUT":
                continue
            arg = first[1] if len(first) > 1 else ""
        found.append(arg)
    return found


@dataclass
class Resolver:
    """Argument declarations to type oids, resolved by the database (`name type` or `type`)."""
    conn: psycopg.Connection
    cache: dict[str, int | None] = field(default_factory=dict)

    def type_oid(self, text: str) -> int | None:
        if text not in self.cache:
            try:
                row = self.conn.execute("SELECT to_regtype(%s)::oid AS oid", (text,)).fetchone()
                self.cache[text] = row["oid"] if row else None
            except psycopg.Error:
                self.cache[text] = None
        return self.cache[text]

    def arg_oid(self, declaration: str) -> int:
        oid = self.type_oid(declaration)
        if oid is None and len(declaration.split(None, 1)) == 2:
            oid = self.type_oid(declaration.split(None, 1)[1])  # a named argument
        if oid is None:
            raise ValueError(f"cannot resolve the argument type of {declaration!r}")
        return oid


Key = tuple  # (schema, name, (argument type oids...))


def created_functions(text: str, resolve: Resolver) -> list[Key]:
    sql = masked(text)
    keys = []
    for m in CREATE.finditer(sql):
        schema, name = qualified(m.group(1))
        close = closing_paren(sql, m.end() - 1)
        keys.append((schema, name, tuple(resolve.arg_oid(a) for a in argument_types(sql[m.end():close]))))
    return keys


def dropped(text: str, resolve: Resolver) -> tuple[set[Key], set[tuple[str, str]], set[str]]:
    """What a revert script drops: functions by signature, functions by bare name (every
    overload), and schemas dropped with CASCADE."""
    sql = masked(text)
    by_signature, by_name = set(), set()
    for m in DROP.finditer(sql):
        statement_end = sql.find(";", m.end())
        statement = sql[m.end():len(sql) if statement_end < 0 else statement_end]
        statement = re.sub(r"\s+(CASCADE|RESTRICT)\s*$", "", statement.strip(), flags=re.I)
        for item in split_top_level(statement):
            paren = item.find("(")
            if paren < 0:
                by_name.add(qualified(item))
                continue
            schema, name = qualified(item[:paren])
            close = closing_paren(item, paren)
            by_signature.add((schema, name, tuple(resolve.arg_oid(a) for a in argument_types(item[paren + 1:close]))))
    schemas = {identifier(s) for m in DROP_SCHEMA.finditer(sql) for s in m.group(1).split(",")}
    return by_signature, by_name, schemas


def with_includes(path: Path) -> str:
    """A script's text with each `\\ir FILE` (psql's include, relative to the script) replaced by
    that file's text: a rework's revert runs the frozen deploy that way."""
    return re.sub(r"(?m)^\\ir\s+(\S+)\s*$", lambda m: with_includes((path.parent / m.group(1)).resolve()),
                  path.read_text())


def plan_entries(plan: Path = ROOT / "sqitch.plan") -> list[str]:
    """The change names of the plan's lines, in order (a reworked change comes again)."""
    names = []
    for line in plan.read_text().splitlines():
        line = line.strip()
        if line and line[0] not in "%#@":
            names.append(line.split()[0])
    return names


def plan_changes() -> list[str]:
    """The changes of the plan, each once: sql/deploy/<name>.sql is its current deploy file."""
    return list(dict.fromkeys(plan_entries()))


REWORKED = {name for name in plan_entries() if plan_entries().count(name) > 1}


# ------------------------------------------------------------------ the catalog

CATALOG_FUNCTIONS = """
SELECT n.nspname AS schema, p.proname AS name, p.proargtypes::oid[] AS argtypes,
       p.oid::regprocedure::text AS signature, obj_description(p.oid, 'pg_proc') AS comment
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'sqitch')
   AND n.nspname NOT LIKE 'pg\\_%'
   AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                    WHERE d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
 ORDER BY 4
"""


@dataclass
class Survey:
    functions: dict[Key, dict]           # every function of the catalog, by key
    homes: dict[Key, list[str]]          # key -> the plan's deploy files that create it
    elsewhere: dict[Key, list[str]]      # key -> other files under sql/deploy that create it (name@tag.sql)
    created_by: dict[str, list[Key]]     # change -> what its deploy file creates
    resolve: Resolver


@pytest.fixture(scope="module")
def survey(admin) -> Survey:
    resolve = Resolver(admin)
    functions = {(r["schema"], r["name"], tuple(r["argtypes"])): r for r in admin.execute(CATALOG_FUNCTIONS)}
    changes = plan_changes()
    homes: dict[Key, list[str]] = {}
    elsewhere: dict[Key, list[str]] = {}
    created_by = {}
    for path in sorted((SQL / "deploy").glob("*.sql")):
        keys = created_functions(path.read_text(), resolve)
        if path.stem in changes:
            created_by[path.stem] = keys
        for key in dict.fromkeys(keys):  # CREATE and then CREATE OR REPLACE in one file: one home
            (homes if path.stem in changes else elsewhere).setdefault(key, []).append(path.name)
    return Survey(functions, homes, elsewhere, created_by, resolve)


def listing(problems: list[str], what: str) -> str:
    return f"{len(problems)} {what}:\n  " + "\n  ".join(problems)


def test_the_catalog_and_the_files_are_read(survey):
    # A broken query or parser would find nothing and prove nothing.
    assert len(survey.functions) >= 50, "the catalog lists the app's functions"
    assert sum(len(k) for k in survey.created_by.values()) >= 50, "the deploy files are parsed"
    assert ("insurance", "require_role", (survey.resolve.type_oid("text[]"),)) in survey.functions


def test_every_function_is_created_by_exactly_one_deploy_file_of_the_plan(survey):
    problems = []
    for key, fn in sorted(survey.functions.items(), key=lambda kv: kv[1]["signature"]):
        homes = survey.homes.get(key, [])
        if not homes:
            only = survey.elsewhere.get(key)
            problems.append(f"{fn['signature']}: no home (created only by {', '.join(only)})" if only else
                            f"{fn['signature']}: no home (no deploy file of sqitch.plan creates it)")
        elif len(homes) > 1:
            problems.append(f"{fn['signature']}: {len(homes)} homes ({', '.join(homes)})")
    if problems:
        pytest.fail(listing(problems, "functions without exactly one home in sql/deploy "
                                           "(a change of sqitch.plan, not a name@tag.sql copy)"), pytrace=False)


def test_every_function_has_a_contract(survey):
    problems = [fn["signature"] for fn in sorted(survey.functions.values(), key=lambda f: f["signature"])
                if not (fn["comment"] or "").strip()]
    if problems:
        pytest.fail(listing(problems, "functions without a COMMENT ON FUNCTION contract "
                                           "(what it takes, returns or raises, who may call it)"), pytrace=False)


def test_what_a_deploy_file_creates_exists(survey):
    # A deploy file that creates a function the catalog does not have: a parse error here, or a
    # function dropped again by a later change (then it is not a home of anything).
    problems = [f"{change}.sql: {key[0]}.{key[1]} with argument types {list(key[2])}"
                for change, keys in survey.created_by.items() for key in keys if key not in survey.functions]
    if problems:
        pytest.fail(listing(problems, "functions created by a deploy file of the plan but absent "
                                           "from the deployed catalog"), pytrace=False)


def test_every_revert_drops_what_its_deploy_creates(survey):
    problems = []
    for change, keys in sorted(survey.created_by.items()):
        revert = SQL / "revert" / f"{change}.sql"
        if not revert.exists():
            problems.append(f"{change}: no sql/revert/{change}.sql")
            continue
        text = with_includes(revert)
        by_signature, by_name, schemas = dropped(text, survey.resolve)
        # After a release, the revert of a reworked change restores the previous version instead.
        restored = set(created_functions(text, survey.resolve)) if change in REWORKED else set()
        for key in dict.fromkeys(keys):
            if key in by_signature or key[:2] in by_name or key[0] in schemas or key in restored:
                continue
            fn = survey.functions.get(key)
            problems.append(f"sql/revert/{change}.sql does not drop "
                            f"{fn['signature'] if fn else f'{key[0]}.{key[1]}'}")
    if problems:
        pytest.fail(listing(problems, "functions that a change's revert leaves behind"), pytrace=False)


# ------------------------------------------------------------------ the reader itself

def test_masking_hides_bodies_strings_and_comments():
    text = ("-- CREATE FUNCTION a.commented()\nCREATE FUNCTION a.real(x int) RETURNS text AS $f$\n"
            "  SELECT 'CREATE FUNCTION a.in_string()' $f$;\n/* CREATE FUNCTION a.blocked() */\n"
            "DO $$ BEGIN EXECUTE 'CREATE FUNCTION a.dynamic()'; END $$;\n"
            "CREATE OR REPLACE FUNCTION \"A\".b(VARIADIC _x text[] DEFAULT '{}', OUT y int) RETURNS int AS $$ $$;")
    sql = masked(text)
    assert len(sql) == len(text)
    assert [m.group(1) for m in CREATE.finditer(sql)] == ["a.real", '"A".b']
    assert argument_types("_a bigint, OUT _b int, VARIADIC _c text[] DEFAULT '{}', _d timestamptz = now()") == \
        ["_a bigint", "_c text[]", "_d timestamptz"]


def test_a_revert_is_read_for_every_drop(admin):
    resolve = Resolver(admin)
    by_signature, by_name, schemas = dropped(
        "DROP FUNCTION IF EXISTS a.f(int, text), a.g(_x timestamptz);\nDROP FUNCTION a.h;\n"
        "-- DROP FUNCTION a.commented(int);\nDROP SCHEMA admin CASCADE;", resolve)
    integer, text, tstz = (resolve.type_oid(t) for t in ("integer", "text", "timestamp with time zone"))
    assert by_signature == {("a", "f", (integer, text)), ("a", "g", (tstz,))}
    assert by_name == {("a", "h")}
    assert schemas == {"admin"}
