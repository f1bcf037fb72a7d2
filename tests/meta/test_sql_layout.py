"""Where each database object lives, so that a DBA finds its file from its name (CONTRIBUTING,
"SQL", "Where things live"), and how every deploy script waits.

- A table: one change creates it (named for it), with its indexes, `ENABLE ROW LEVEL SECURITY`,
  its policies and the triggers on it. Exceptions, each checked here:
  a policy that must read a table created later lives in `<table>_<who>_policies` (right after
  that table); a trigger that keeps another object (a read model, a counter, the outbox) lives
  beside its trigger function, in the change of what it keeps.
- A function of schema S: in a change named `S` (the schema's shared helpers) or `S_<area>`;
  for `insurance` (tables' helpers) also the change of a table it serves.
- A table changes later by a small change named for it (`<table>_<what>`): its index, its
  policy, its ALTER live there.
- Every deploy script is one transaction whose first statements bound its waits, except a
  non-transactional change that builds or drops an index CONCURRENTLY (bounded waits too).
- A deploy of a change not yet released that takes a lock blocking a table's writers (SHARE and
  stronger) or readers (ACCESS EXCLUSIVE) on a table it did not create says why on the line before.

The catalog of the deployed database says what exists; the deploy files (read as PostgreSQL reads
them: comments, strings and bodies skipped) say where it is created.
"""
from __future__ import annotations

import os
import re
import subprocess
import uuid

import psycopg
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
        later_change = len(homes) == 1 and later_table_change(layout, table, homes[0])
        if homes != [home] and not later_exception and not later_change:
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


def later_table_change(layout: Layout, table: str, change: str) -> bool:
    """Whether `change` is a small change of `table` made after it: `<table>_<what>`."""
    home = layout.table_change(table)
    return (change.startswith(f"{table.split('.')[1]}_") and home in layout.changes
            and layout.changes.index(change) > layout.changes.index(home))


def test_every_index_lives_in_its_tables_change(layout, catalog):
    problems = []
    for r in catalog["indexes"]:
        homes = layout.indexes.get((r["tbl"], r["name"]), [])
        if homes != [layout.table_change(r["tbl"])] and \
                not (len(homes) == 1 and later_table_change(layout, r["tbl"], homes[0])):
            problems.append(f"{r['name']} on {r['tbl']}: in {homes or 'no file'}, expected "
                            f"{layout.table_change(r['tbl'])}.sql or a later {r['tbl'].split('.')[1]}_<what>.sql")
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


def header_problems(change: str, text: str) -> list[str]:
    """What is wrong with a deploy script's transaction and bounded waits (CONTRIBUTING, "SQL")."""
    sql = masked(text)
    if re.search(r"\bCONCURRENTLY\b", sql, re.IGNORECASE) and not re.search(r"^\s*(BEGIN|COMMIT)\s*;", sql, re.MULTILINE | re.IGNORECASE):
        return non_transactional_problems(change, text, sql)
    problems = []
    if BOUNDED_WAITS not in text or text.index(BOUNDED_WAITS) != sql.find("BEGIN;"):
        problems.append(f"{change}.sql: its first statements after BEGIN are not\n      "
                        + BOUNDED_WAITS.replace("\n", "\n      "))
    if len(re.findall(r"^\s*BEGIN\s*;", sql, re.MULTILINE | re.IGNORECASE)) != 1 or \
            len(re.findall(r"^\s*COMMIT\s*;", sql, re.MULTILINE | re.IGNORECASE)) != 1:
        problems.append(f"{change}.sql: not exactly one BEGIN ... COMMIT (a failed deploy must leave nothing)")
    if re.search(r"\bCONCURRENTLY\b", sql, re.IGNORECASE):
        problems.append(f"{change}.sql: CONCURRENTLY cannot run in the deploy's transaction "
                        "(a change of its own, without BEGIN/COMMIT)")
    return problems


# A non-transactional change (CONTRIBUTING, "SQL"): no BEGIN/COMMIT, the same bounds set for the
# session, and only what CONCURRENTLY needs: an INVALID leftover of a failed build found and
# dropped (psql's \gset and \if), the index built or dropped, its comment.
NON_TRANSACTIONAL_WAITS = "SET lock_timeout = '5s';\nSET statement_timeout = '5min';\n"
NON_TRANSACTIONAL_STATEMENTS = re.compile(
    r"(SET\s+(lock_timeout|statement_timeout|ROLE)\b|SELECT\b|(CREATE\s+(UNIQUE\s+)?|DROP\s+)INDEX\s+CONCURRENTLY\b"
    r"|COMMENT\s+ON\s+INDEX\b)", re.IGNORECASE)


def non_transactional_problems(change: str, text: str, sql: str) -> list[str]:
    problems = []
    first = re.search(r"\S", sql)
    if not first or not text.startswith(NON_TRANSACTIONAL_WAITS, first.start()):
        problems.append(f"{change}.sql: a non-transactional script starts with\n      "
                        + NON_TRANSACTIONAL_WAITS.replace("\n", "\n      "))
    # psql's meta-commands (\gset, \if, \endif) end a statement as `;` does.
    statements = [" ".join(st.split()) for st in re.sub(r"\\[A-Za-z]+[^\n]*", ";", sql).split(";")]
    for statement in filter(None, statements):
        if not NON_TRANSACTIONAL_STATEMENTS.match(statement):
            problems.append(f"{change}.sql: {statement[:80]}: a non-transactional change builds or drops "
                            "an index CONCURRENTLY and nothing else (anything else belongs in a transaction)")
    if re.search(r"\bCREATE\s+(UNIQUE\s+)?INDEX\s+CONCURRENTLY\b", sql, re.IGNORECASE) and \
            not re.search(r"\bNOT\s+indisvalid\b", sql, re.IGNORECASE):
        problems.append(f"{change}.sql: does not drop an INVALID leftover of a failed build before building")
    return problems


def test_every_deploy_script_is_one_transaction_with_bounded_waits():
    problems = []
    for change in plan_changes():
        problems += header_problems(change, (SQL / "deploy" / f"{change}.sql").read_text())
    fail(problems, "deploy scripts whose waits are not bounded")


CONCURRENT_INDEX = """-- Deploy insurance:risk_items_variant_idx to pg (non-transactional: CREATE INDEX CONCURRENTLY)
SET lock_timeout = '5s';
SET statement_timeout = '5min';
SET ROLE insurance_owner;
SELECT EXISTS (SELECT FROM pg_catalog.pg_index
                WHERE indexrelid = pg_catalog.to_regclass('insurance.risk_items_variant_idx')
                  AND NOT indisvalid) AS invalid_leftover \\gset
\\if :invalid_leftover
DROP INDEX CONCURRENTLY insurance.risk_items_variant_idx;
\\endif
CREATE INDEX CONCURRENTLY IF NOT EXISTS risk_items_variant_idx ON insurance.risk_items (variant);
"""


def test_a_non_transactional_index_change_is_accepted_and_held_to_its_rule():
    assert header_problems("risk_items_variant_idx", CONCURRENT_INDEX) == []
    revert = "SET lock_timeout = '5s';\nSET statement_timeout = '5min';\n" \
             "DROP INDEX CONCURRENTLY IF EXISTS insurance.risk_items_variant_idx;\n"
    assert header_problems("risk_items_variant_idx", revert) == []
    unbounded = CONCURRENT_INDEX.replace("SET lock_timeout = '5s';\n", "")
    assert "starts with" in header_problems("x", unbounded)[0]
    more = CONCURRENT_INDEX + "ALTER TABLE insurance.risk_items ADD COLUMN x int;\n"
    assert "nothing else" in header_problems("x", more)[0]
    no_cleanup = "\n".join(line for line in CONCURRENT_INDEX.splitlines() if "DROP" not in line
                           and "indisvalid" not in line and "\\" not in line and "pg_index" not in line
                           and "indexrelid" not in line)
    assert any("INVALID leftover" in p for p in header_problems("x", no_cleanup))
    inside = "BEGIN;\nSET LOCAL lock_timeout = '5s';\nSET LOCAL statement_timeout = '5min';\n" \
             "CREATE INDEX CONCURRENTLY i ON insurance.risk_items (variant);\nCOMMIT;\n"
    assert any("cannot run in the deploy's transaction" in p for p in header_problems("x", inside))


def test_a_deploy_without_bounded_waits_is_found(tmp_path):
    # The check above reads the header as written: a script that sets only one bound, or sets it
    # after other statements, does not pass.
    good = "-- Deploy x\nBEGIN;\nSET LOCAL lock_timeout = '5s';\nSET LOCAL statement_timeout = '5min';\nCOMMIT;\n"
    late = "BEGIN;\nCREATE TABLE a.b ();\nSET LOCAL lock_timeout = '5s';\nSET LOCAL statement_timeout = '5min';\nCOMMIT;\n"
    for text, ok in ((good, True), (late, False), (good.replace("SET LOCAL statement_timeout = '5min';\n", ""), False)):
        assert (BOUNDED_WAITS in text and text.index(BOUNDED_WAITS) == masked(text).find("BEGIN;")) is ok


# ------------------------------------------------------------------ locks on tables that serve traffic

# Statements that make a table's traffic wait, with the lock they take on it: SHARE and stronger
# stop its writers (a partner's POST, the worker's claim), ACCESS EXCLUSIVE its readers too.
# Every table that exists when a deploy runs serves traffic (even a small one: ACCESS EXCLUSIVE on
# channels stops every gateway call), so the rule covers every table but those the same script
# creates (new, empty, not yet read). The lock is held until the deploy's COMMIT.
T = rf"((?:{NAME}\.)?{NAME})"
LOCKING = [
    (re.compile(rf"\bALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?(?:ONLY\s+)?{T}(?P<rest>[^;]*)", re.IGNORECASE), "ACCESS EXCLUSIVE"),
    (re.compile(rf"\bCREATE\s+(?:UNIQUE\s+)?INDEX\s+(?!CONCURRENTLY\b)(?:IF\s+NOT\s+EXISTS\s+)?(?:{NAME}\s+)?ON\s+"
                rf"(?:ONLY\s+)?{T}", re.IGNORECASE), "SHARE"),
    (re.compile(rf"\b(?:CREATE|ALTER|DROP)\s+POLICY\s+(?:IF\s+EXISTS\s+)?{NAME}\s+ON\s+{T}", re.IGNORECASE), "ACCESS EXCLUSIVE"),
    (re.compile(rf"\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:CONSTRAINT\s+)?TRIGGER\s+{NAME}\s+[^;]*?\bON\s+{T}", re.IGNORECASE),
     "SHARE ROW EXCLUSIVE"),
    (re.compile(rf"\bDROP\s+TRIGGER\s+(?:IF\s+EXISTS\s+)?{NAME}\s+ON\s+{T}", re.IGNORECASE), "ACCESS EXCLUSIVE"),
    (re.compile(rf"\b(?:TRUNCATE|DROP\s+TABLE|VACUUM\s+FULL|CLUSTER|REINDEX\s+TABLE)\s+(?:TABLE\s+)?(?:IF\s+EXISTS\s+)?"
                rf"(?:ONLY\s+)?{T}", re.IGNORECASE), "ACCESS EXCLUSIVE"),
    (re.compile(rf"\bLOCK\s+(?:TABLE\s+)?(?:ONLY\s+)?{T}(?P<rest>[^;]*)", re.IGNORECASE), "ACCESS EXCLUSIVE"),
    (re.compile(rf"\bREFERENCES\s+{T}", re.IGNORECASE), "SHARE ROW EXCLUSIVE"),  # a foreign key locks the table it references
    (re.compile(rf"\bDROP\s+INDEX\s+(?!CONCURRENTLY\b)(?:IF\s+EXISTS\s+)?{T}", re.IGNORECASE), "ACCESS EXCLUSIVE"),
]
# ALTER TABLE sub-commands that take only SHARE UPDATE EXCLUSIVE (traffic goes on).
GENTLE_ALTER = re.compile(r"^\s*(VALIDATE\s+CONSTRAINT\s+\S+|ALTER\s+(COLUMN\s+)?\S+\s+SET\s+STATISTICS\s+\d+)\s*$", re.IGNORECASE)
LOCK_MODE = re.compile(r"\bIN\s+(ACCESS\s+SHARE|ROW\s+SHARE|ROW\s+EXCLUSIVE|SHARE\s+UPDATE\s+EXCLUSIVE|SHARE\s+ROW\s+"
                       r"EXCLUSIVE|SHARE|EXCLUSIVE|ACCESS\s+EXCLUSIVE)\s+MODE\b", re.IGNORECASE)
HARMLESS_LOCKS = {"ACCESS SHARE", "ROW SHARE", "ROW EXCLUSIVE", "SHARE UPDATE EXCLUSIVE"}
# The reason, on the line right before the statement: the lock, the table and why it is fine.
LOCK_REASON = re.compile(r"^\s*--.*\b(ACCESS EXCLUSIVE|SHARE ROW EXCLUSIVE|EXCLUSIVE|SHARE)\b.*:\s*\S", re.IGNORECASE)


def unreleased_changes(plan_text: str) -> list[str]:
    """The changes whose current deploy script is not released: their last line in the plan comes
    after its newest tag (released scripts are frozen: a finding there could never be fixed)."""
    entries = [line.split()[0] for line in plan_text.splitlines() if line.strip() and line[0] not in "%#"]
    last_tag = max((i for i, e in enumerate(entries) if e.startswith("@")), default=-1)
    later = [e for e in entries[last_tag + 1:] if not e.startswith("@")]
    return list(dict.fromkeys(later))


def index_tables() -> dict[str, str]:
    """index name -> its table, from every deploy script of the plan (for DROP INDEX)."""
    found = {}
    for path in (SQL / "deploy").glob("*.sql"):
        for m in INDEX_RE.finditer(masked(path.read_text())):
            found[m.group(1).lower()] = m.group(2).lower()
    return found


def lock_findings(change: str, text: str, indexes: dict[str, str] | None = None) -> list[str]:
    """Every statement of `text` that locks a table it did not create against traffic, without a
    reason on the line before."""
    sql = masked(text)
    created = {m.group(1).lower().split(".")[-1] for m in TABLE_RE.finditer(sql)}
    lines = text.splitlines()
    findings = []
    start = 0
    for statement in sql.split(";"):
        offset = start
        start += len(statement) + 1
        for pattern, mode in LOCKING:
            for m in pattern.finditer(statement):
                table = m.group(1).lower()
                if "DROP" in m.group(0).upper().split()[0:1] and "INDEX" in m.group(0).upper():
                    table = (indexes or {}).get(table.split(".")[-1], table)
                rest = m.groupdict().get("rest") or ""
                if pattern.pattern.startswith(r"\bLOCK"):
                    named = LOCK_MODE.search(rest)
                    mode = " ".join(named.group(1).upper().split()) if named else "ACCESS EXCLUSIVE"
                    if mode in HARMLESS_LOCKS:
                        continue
                if pattern.pattern.startswith(r"\bALTER\s+TABLE") and rest and \
                        all(GENTLE_ALTER.match(part) for part in rest.split(",")):
                    continue
                if table.split(".")[-1] in created:
                    continue
                first_line = text.count("\n", 0, offset + len(statement) - len(statement.lstrip()))
                before = lines[first_line - 1] if first_line > 0 else ""
                if not LOCK_REASON.match(before):
                    findings.append(f"{change}.sql:{first_line + 1}: {mode} on {table} "
                                    f"({' '.join(m.group(0).split())[:60]}...) without a reason on the line before "
                                    f"(`-- {mode} on {table.split('.')[-1]}: <why it is short and safe>`)")
    return findings


def test_unreleased_deploys_say_why_they_lock_a_table_that_serves_traffic():
    plan = (SQL.parent / "sqitch.plan").read_text()
    indexes = index_tables()
    problems = []
    for change in unreleased_changes(plan):
        problems += lock_findings(change, (SQL / "deploy" / f"{change}.sql").read_text(), indexes)
    fail(problems, "deploys that lock a table serving traffic without saying why")


def test_a_planted_exclusive_lock_on_risk_items_without_a_reason_is_found():
    header = "BEGIN;\nSET LOCAL lock_timeout = '5s';\nSET LOCAL statement_timeout = '5min';\nSET LOCAL ROLE insurance_owner;\n"
    planted = header + "ALTER TABLE insurance.risk_items ADD COLUMN note text;\nCOMMIT;\n"
    found = lock_findings("risk_items_note", planted)
    assert len(found) == 1 and "risk_items_note.sql:5: ACCESS EXCLUSIVE on insurance.risk_items" in found[0]
    reasoned = planted.replace("ALTER TABLE", "-- ACCESS EXCLUSIVE on risk_items: a column without a default, "
                                              "a catalog change only\nALTER TABLE")
    assert lock_findings("risk_items_note", reasoned) == []
    # A plain CREATE INDEX (SHARE: writers wait for the whole build), a policy, a trigger, a
    # foreign key to it, an explicit LOCK: each found; on a table the script creates, none.
    for statement, mode in (
            ("CREATE INDEX risk_items_note_idx ON insurance.risk_items (variant)", "SHARE on insurance.risk_items"),
            ("CREATE POLICY risk_items_select_x ON insurance.risk_items FOR SELECT TO insurance_holder USING (true)",
             "ACCESS EXCLUSIVE on insurance.risk_items"),
            ("CREATE TRIGGER t AFTER INSERT ON insurance.beneficiaries FOR EACH ROW EXECUTE FUNCTION insurance.f()",
             "SHARE ROW EXCLUSIVE on insurance.beneficiaries"),
            ("CREATE TABLE insurance.notes (id bigint REFERENCES insurance.risk_items (id))",
             "SHARE ROW EXCLUSIVE on insurance.risk_items"),
            ("LOCK TABLE outbox.http_requests IN SHARE MODE", "SHARE on outbox.http_requests"),
            ("DROP INDEX insurance.risk_items_channel_id_idx", "ACCESS EXCLUSIVE on insurance.risk_items")):
        found = lock_findings("x", header + statement + ";\nCOMMIT;\n", index_tables())
        assert len(found) == 1 and mode in found[0], (statement, found)
    gentle = ("CREATE TABLE insurance.notes (id bigint PRIMARY KEY);\nCREATE INDEX notes_idx ON insurance.notes (id);\n"
              "ALTER TABLE insurance.notes ENABLE ROW LEVEL SECURITY;\n"
              "ALTER TABLE insurance.risk_items VALIDATE CONSTRAINT risk_items_note_check;\n"
              "LOCK TABLE insurance.risk_items IN ROW EXCLUSIVE MODE;\n"
              "CREATE INDEX CONCURRENTLY IF NOT EXISTS risk_items_v_idx ON insurance.risk_items (variant);\n")
    assert lock_findings("x", header + gentle + "COMMIT;\n") == []
    # Only what can still change is read: after a tag, nothing before it.
    assert unreleased_changes("a 2026\n@v1 2026\nb 2026\na [a@v1] 2026\n") == ["b", "a"]
    assert unreleased_changes("a 2026\n@v1 2026\n") == []


def test_a_concurrent_index_change_deploys_over_a_failed_build_and_reverts(tmp_path):
    """The non-transactional template on a sqitch project of its own and a database of its own:
    a build that failed left an INVALID index of that name; the deploy drops it and builds a
    valid one (sqitch runs the script without a transaction); the revert drops it concurrently."""
    host, port = os.environ.get("PGHOST", "127.0.0.1"), os.environ.get("PGPORT", "5432")
    name = f"concurrent_index_{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "SQITCH_FULLNAME": "Layout Test", "SQITCH_EMAIL": "layout@insurance.invalid",
           "PGOPTIONS": "-c client_min_messages=warning"}
    target = f"db:pg://postgres@{host}:{port}/{name}"

    def sqitch(*args: str) -> None:
        subprocess.run(["sqitch", *args], cwd=tmp_path, env=env, check=True, capture_output=True, text=True)

    sqitch("init", "demo", "--engine", "pg", "--top-dir", "sql", "--plan-file", "sqitch.plan")
    sqitch("add", "notes", "-n", "a table")
    sqitch("add", "notes_body_idx", "-n", "an index built concurrently")
    (tmp_path / "sql/deploy/notes.sql").write_text("BEGIN;\nCREATE TABLE public.notes (id int, body text);\nCOMMIT;\n")
    (tmp_path / "sql/revert/notes.sql").write_text("DROP TABLE public.notes;\n")
    (tmp_path / "sql/deploy/notes_body_idx.sql").write_text(
        CONCURRENT_INDEX.replace("insurance.risk_items_variant_idx", "public.notes_body_idx")
        .replace("risk_items_variant_idx ON insurance.risk_items (variant)", "notes_body_idx ON public.notes (body)")
        .replace("SET ROLE insurance_owner;\n", ""))
    (tmp_path / "sql/revert/notes_body_idx.sql").write_text(
        "SET lock_timeout = '5s';\nDROP INDEX CONCURRENTLY IF EXISTS public.notes_body_idx;\n")
    for script in ("verify/notes.sql", "verify/notes_body_idx.sql"):
        (tmp_path / "sql" / script).write_text("SELECT 1;\n")
    assert header_problems("notes_body_idx", (tmp_path / "sql/deploy/notes_body_idx.sql").read_text()) == []
    server = f"postgresql://postgres@{host}:{port}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        sqitch("deploy", "--to", "notes", target)
        with psycopg.connect(f"{server}/{name}", autocommit=True) as conn:
            conn.execute("INSERT INTO public.notes SELECT 1, 'same' FROM generate_series(1, 2)")
            # A build that failed half way (here: a unique index over duplicates) leaves its index INVALID.
            with pytest.raises(psycopg.errors.UniqueViolation):
                conn.execute("CREATE UNIQUE INDEX CONCURRENTLY notes_body_idx ON public.notes (body)")
            valid = "SELECT indisvalid, indisunique FROM pg_index WHERE indexrelid = 'public.notes_body_idx'::regclass"
            assert conn.execute(valid).fetchone() == (False, True)
            sqitch("deploy", target)
            assert conn.execute(valid).fetchone() == (True, False)
            sqitch("revert", "-y", "--to", "notes", target)
            assert conn.execute("SELECT to_regclass('public.notes_body_idx')").fetchone() == (None,)
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# Tables are never reworked (CONTRIBUTING, "SQL", "Naming a new change"): since this release, a
# table changes by a small `<table>_<what>` change. risk_items and outbox were reworked before it.
TABLES_NEVER_REWORKED_SINCE = "v1.0.0"


def reworked_table_changes(plan_text: str) -> list[str]:
    entries = [line.split()[0] for line in plan_text.splitlines() if line.strip() and line[0] not in "%#"]
    start = entries.index(f"@{TABLES_NEVER_REWORKED_SINCE}") if f"@{TABLES_NEVER_REWORKED_SINCE}" in entries else len(entries)
    found = []
    for i, name in enumerate(entries[start:], start):
        if not name.startswith("@") and name in entries[:i]:
            path = SQL / "deploy" / f"{name}.sql"
            if path.exists() and TABLE_RE.search(masked(path.read_text())):
                found.append(name)
    return found


def test_no_table_is_reworked():
    found = reworked_table_changes((SQL.parent / "sqitch.plan").read_text())
    fail([f"{name}: reworked after @{TABLES_NEVER_REWORKED_SINCE}, and its deploy creates a table "
          f"(a table changes by a new change {name}_<what>)" for name in found], "tables reworked")
    assert reworked_table_changes(f"risk_items 2026\n@{TABLES_NEVER_REWORKED_SINCE} 2026\n"
                                  "risk_items [risk_items@v1.0.0] 2026\n") == ["risk_items"]
