"""Where each database object lives, so that a DBA finds its file from its name (CONTRIBUTING,
"SQL", "Where things live"), and how every deploy script waits.

- A table: one change creates it (named for it), with its indexes, `ENABLE ROW LEVEL SECURITY`,
  its policies and the triggers on it. Exceptions, each checked here:
  a policy that must read a table created later lives in `<table>_<who>_policies` (right after
  that table); a trigger that keeps another object (a read model, a counter, the outbox) lives
  beside its trigger function, in the change of what it keeps.
- A function of schema S: in a change named `S` (the schema's shared helpers) or `S_<area>`;
  for `insurance` (tables' helpers) also the change of a table it serves.
- Every deploy script is one transaction whose first statements bound its waits.

The catalog of the deployed database says what exists; the deploy files (read as PostgreSQL reads
them: comments, strings and bodies skipped) say where it is created.
"""
from __future__ import annotations

import re

import pytest

from scripts.sql_files import CREATED, NAME, masked, plan_changes
from tests.meta.test_sql_catalog import SQL, Resolver, created_functions, listing

TABLE_RE, POLICY_RE, INDEX_RE = CREATED["table"], CREATED["policy"], CREATED["index"]
TRIGGER_RE = re.compile(rf"\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:CONSTRAINT\s+)?TRIGGER\s+({NAME})\s+.*?\bON\s+({NAME}\.{NAME})"
                        rf".*?\bEXECUTE\s+(?:FUNCTION|PROCEDURE)\s+({NAME}\.{NAME})", re.IGNORECASE | re.DOTALL)

# The bounded waits every deploy script starts with, right after BEGIN (CONTRIBUTING, "SQL").
BOUNDED_WAITS = ("BEGIN;\nSET LOCAL lock_timeout = '5s';\nSET LOCAL statement_timeout = '5min';\n")

CATALOG = {
    "tables": """SELECT n.nspname || '.' || c.relname AS name FROM pg_catalog.pg_class c
                   JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                  WHERE c.relkind IN ('r', 'p') AND n.nspname IN ('insurance', 'outbox', 'webhooks')""",
    "policies": "SELECT schemaname || '.' || tablename AS tbl, policyname AS name FROM pg_catalog.pg_policies "
                "WHERE schemaname IN ('insurance', 'outbox', 'webhooks')",
    # Indexes made by CREATE INDEX, not those of a PRIMARY KEY / UNIQUE / EXCLUDE constraint.
    "indexes": """SELECT n.nspname || '.' || t.relname AS tbl, i.relname AS name
                    FROM pg_catalog.pg_index x
                    JOIN pg_catalog.pg_class i ON i.oid = x.indexrelid
                    JOIN pg_catalog.pg_class t ON t.oid = x.indrelid
                    JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
                   WHERE n.nspname IN ('insurance', 'outbox', 'webhooks')
                     AND NOT EXISTS (SELECT FROM pg_catalog.pg_constraint k WHERE k.conindid = x.indexrelid)""",
    "triggers": """SELECT n.nspname || '.' || t.relname AS tbl, g.tgname AS name
                     FROM pg_catalog.pg_trigger g
                     JOIN pg_catalog.pg_class t ON t.oid = g.tgrelid
                     JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
                    WHERE NOT g.tgisinternal AND n.nspname IN ('insurance', 'outbox', 'webhooks')""",
}


class Layout:
    """What each deploy file of the plan creates, read from the files."""

    def __init__(self, resolve: Resolver):
        self.changes = plan_changes()
        self.tables: dict[str, list[str]] = {}      # schema.table -> changes
        self.policies: dict[tuple, list[str]] = {}  # (schema.table, name) -> changes
        self.indexes: dict[tuple, list[str]] = {}
        self.triggers: dict[tuple, list[str]] = {}
        self.trigger_function: dict[tuple, str] = {}
        self.functions: dict[tuple, list[str]] = {}  # (schema, name) -> changes
        self.creates_table: set[str] = set()
        for change in self.changes:
            text = (SQL / "deploy" / f"{change}.sql").read_text()
            sql = masked(text)
            for m in TABLE_RE.finditer(sql):
                self.tables.setdefault(m.group(1).lower(), []).append(change)
                self.creates_table.add(change)
            for m in POLICY_RE.finditer(sql):
                self.policies.setdefault((m.group(2).lower(), m.group(1).lower()), []).append(change)
            for m in INDEX_RE.finditer(sql):
                self.indexes.setdefault((m.group(2).lower(), m.group(1).lower()), []).append(change)
            for m in TRIGGER_RE.finditer(sql):
                key = (m.group(2).lower(), m.group(1).lower())
                self.triggers.setdefault(key, []).append(change)
                self.trigger_function[key] = m.group(3).lower()
            for schema, name, _ in created_functions(text, resolve):
                self.functions.setdefault((schema, name), [])
                if change not in self.functions[(schema, name)]:
                    self.functions[(schema, name)].append(change)

    def table_change(self, table: str) -> str | None:
        homes = self.tables.get(table, [])
        return homes[0] if len(homes) == 1 else None


@pytest.fixture(scope="module")
def layout(admin) -> Layout:
    return Layout(Resolver(admin))


@pytest.fixture(scope="module")
def catalog(admin) -> dict[str, list[dict]]:
    return {what: admin.execute(query).fetchall() for what, query in CATALOG.items()}


def fail(problems: list[str], what: str) -> None:
    if problems:
        pytest.fail(listing(sorted(problems), what), pytrace=False)


def test_the_files_and_the_catalog_are_read(layout, catalog):
    assert len(catalog["tables"]) >= 20 and len(layout.tables) == len(catalog["tables"])
    assert len(catalog["policies"]) >= 20 and len(catalog["indexes"]) >= 10 and len(catalog["triggers"]) >= 10
    assert ("insurance.risk_items", "risk_items_select_channel") in layout.policies


def test_every_table_is_created_by_one_change(layout, catalog):
    fail([f"{r['name']}: created by {layout.tables.get(r['name'], ['no change'])}" for r in catalog["tables"]
          if len(layout.tables.get(r["name"], [])) != 1], "tables without exactly one change")


def test_every_policy_lives_in_its_tables_change(layout, catalog):
    problems = []
    for r in catalog["policies"]:
        table, name = r["tbl"], r["name"]
        bare = table.split(".")[1]
        if not re.fullmatch(rf"{bare}_(select|insert|update|delete|all)_[a-z]+", name):
            problems.append(f"{name} on {table}: not named <table>_<command>_<who>")
        homes = layout.policies.get((table, name), [])
        home = layout.table_change(table)
        later_exception = re.fullmatch(rf"{bare}_[a-z]+_policies", homes[0]) if len(homes) == 1 else None
        if homes != [home] and not later_exception:
            problems.append(f"{name} on {table}: in {homes or 'no file'}, expected {home}.sql "
                            f"(or {bare}_<who>_policies.sql when it reads a table created later)")
    fail(problems, "policies away from their table's change")


def test_the_policy_exceptions_hold_only_policies_that_read_a_later_table(layout):
    problems = []
    for change in layout.changes:
        if change.endswith("_policies"):
            sql = masked((SQL / "deploy" / f"{change}.sql").read_text())
            statements = [" ".join(s.split()) for s in sql.split(";") if s.strip()]
            for s in statements:
                if not re.match(r"(BEGIN|COMMIT|SET LOCAL|CREATE POLICY|COMMENT ON POLICY)\b", s, re.IGNORECASE):
                    problems.append(f"{change}.sql: {s[:80]}")
            for (table, name), homes in layout.policies.items():
                if change in homes and layout.changes.index(layout.table_change(table)) > layout.changes.index(change):
                    problems.append(f"{change}.sql comes before {table}'s change")
    fail(problems, "statements other than policies in a <table>_<who>_policies change")


def test_every_index_lives_in_its_tables_change(layout, catalog):
    problems = []
    for r in catalog["indexes"]:
        homes = layout.indexes.get((r["tbl"], r["name"]), [])
        if homes != [layout.table_change(r["tbl"])]:
            problems.append(f"{r['name']} on {r['tbl']}: in {homes or 'no file'}, expected "
                            f"{layout.table_change(r['tbl'])}.sql")
    fail(problems, "indexes away from their table's change")


def test_every_trigger_lives_with_its_table_or_with_what_it_keeps(layout, catalog):
    problems = []
    for r in catalog["triggers"]:
        key = (r["tbl"], r["name"])
        homes = layout.triggers.get(key, [])
        if len(homes) != 1:
            problems.append(f"{r['name']} on {r['tbl']}: in {homes or 'no file'}")
            continue
        function = layout.trigger_function[key]
        beside_its_function = homes[0] in layout.functions.get(tuple(function.split(".")), [])
        if homes[0] != layout.table_change(r["tbl"]) and not beside_its_function:
            problems.append(f"{r['name']} on {r['tbl']}: in {homes[0]}.sql, neither its table's change "
                            f"({layout.table_change(r['tbl'])}.sql) nor beside {function}")
    fail(problems, "triggers away from their table and from their function")


def test_every_function_lives_in_its_schemas_changes(layout):
    problems = []
    for (schema, name), homes in sorted(layout.functions.items()):
        for change in homes:
            surface = change == schema or change.startswith(f"{schema}_")
            table_helper = schema == "insurance" and change in layout.creates_table
            if not (surface or table_helper):
                problems.append(f"{schema}.{name}: in {change}.sql, expected {schema}.sql or {schema}_<area>.sql"
                                + (" or a table's change" if schema == "insurance" else ""))
    fail(problems, "functions away from their schema's changes")


def test_table_changes_create_only_their_tables_helpers(layout):
    # A surface's function in a table's change would be found by nobody who looks for it by name.
    problems = []
    for (schema, name), homes in layout.functions.items():
        for change in homes:
            schemas = {t.split(".")[0] for t, owners in layout.tables.items() if change in owners}
            if change in layout.creates_table and schema not in schemas:
                problems.append(f"{schema}.{name}: in {change}.sql, a change of {', '.join(sorted(schemas))} tables")
    fail(problems, "surface functions in a table's change")


def test_every_deploy_script_is_one_transaction_with_bounded_waits():
    problems = []
    for change in plan_changes():
        text = (SQL / "deploy" / f"{change}.sql").read_text()
        sql = masked(text)
        if BOUNDED_WAITS not in text or text.index(BOUNDED_WAITS) != sql.find("BEGIN;"):
            problems.append(f"{change}.sql: its first statements after BEGIN are not\n      "
                            + BOUNDED_WAITS.replace("\n", "\n      "))
        if len(re.findall(r"^\s*BEGIN\s*;", sql, re.MULTILINE | re.IGNORECASE)) != 1 or \
                len(re.findall(r"^\s*COMMIT\s*;", sql, re.MULTILINE | re.IGNORECASE)) != 1:
            problems.append(f"{change}.sql: not exactly one BEGIN ... COMMIT (a failed deploy must leave nothing)")
        if re.search(r"\bCONCURRENTLY\b", sql, re.IGNORECASE):
            problems.append(f"{change}.sql: CONCURRENTLY cannot run in the deploy's transaction")
    fail(problems, "deploy scripts whose waits are not bounded")


def test_a_deploy_without_bounded_waits_is_found(tmp_path):
    # The check above reads the header as written: a script that sets only one bound, or sets it
    # after other statements, does not pass.
    good = "-- Deploy x\nBEGIN;\nSET LOCAL lock_timeout = '5s';\nSET LOCAL statement_timeout = '5min';\nCOMMIT;\n"
    late = "BEGIN;\nCREATE TABLE a.b ();\nSET LOCAL lock_timeout = '5s';\nSET LOCAL statement_timeout = '5min';\nCOMMIT;\n"
    for text, ok in ((good, True), (late, False), (good.replace("SET LOCAL statement_timeout = '5min';\n", ""), False)):
        assert (BOUNDED_WAITS in text and text.index(BOUNDED_WAITS) == masked(text).find("BEGIN;")) is ok
