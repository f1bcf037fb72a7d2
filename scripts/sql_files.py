"""Reading sqitch.plan and sql/deploy as PostgreSQL reads them: which file creates which object.

Shared by scripts/sql_reference.py (the file of every object in docs/sql-reference.md) and the
tests that keep the layout (tests/meta/test_sql_catalog.py, tests/meta/test_sql_layout.py).
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAME = r"[A-Za-z_][A-Za-z_0-9]*"
CREATED = {
    "function": re.compile(rf"\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|PROCEDURE)\s+({NAME}\.{NAME})\s*\(", re.IGNORECASE),
    "table": re.compile(rf"\bCREATE\s+(?:UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?({NAME}\.{NAME})", re.IGNORECASE),
    "policy": re.compile(rf"\bCREATE\s+POLICY\s+({NAME})\s+ON\s+({NAME}\.{NAME})", re.IGNORECASE),
    "index": re.compile(rf"\bCREATE\s+(?:UNIQUE\s+)?INDEX\s+(?:CONCURRENTLY\s+)?(?:IF\s+NOT\s+EXISTS\s+)?({NAME})\s+ON\s+"
                        rf"(?:ONLY\s+)?({NAME}\.{NAME})", re.IGNORECASE),
    "trigger": re.compile(rf"\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:CONSTRAINT\s+)?TRIGGER\s+({NAME})\s+[^;]*?\bON\s+({NAME}\.{NAME})", re.IGNORECASE),
}


def masked(text: str) -> str:
    """`text` with comments, string literals and dollar-quoted bodies blanked (same length, line
    breaks kept), so that a regular expression sees only top-level SQL."""
    out = list(text)
    i, n = 0, len(text)

    def blank(start: int, end: int) -> None:
        for k in range(start, end):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("--", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif c == "'":
            escapes = i > 0 and text[i - 1] in "eE" and (i < 2 or not (text[i - 2].isalnum() or text[i - 2] == "_"))
            j = i + 1
            while j < n:
                if escapes and text[j] == "\\" or text[j] == "'" and text.startswith("''", j):
                    j += 2
                elif text[j] == "'":
                    break
                else:
                    j += 1
            blank(i, j + 1)
            i = j + 1
        elif c == '"':
            j = text.find('"', i + 1)
            i = n if j < 0 else j + 1
        elif c == "$" and (m := re.match(r"\$([A-Za-z_][A-Za-z_0-9]*)?\$", text[i:])) and \
                not (i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")):
            tag = m.group(0)
            end = text.find(tag, i + len(tag))
            end = n if end < 0 else end + len(tag)
            blank(i, end)
            i = end
        else:
            i += 1
    return "".join(out)


def with_includes(path: Path) -> str:
    """The text of a script with every `\\ir file` (or `\\include_relative`) replaced by that
    file's text, as psql runs it (a rework's revert includes its released deploy script)."""
    def include(m: re.Match) -> str:
        return with_includes((path.parent / m.group(1)).resolve())
    return re.sub(r"^\\(?:ir|include_relative)\s+(\S+)\s*$", include, path.read_text(), flags=re.MULTILINE)


def plan_changes(plan: Path = ROOT / "sqitch.plan") -> list[str]:
    """The changes of the plan, each once, in order: sql/deploy/<name>.sql is its current deploy file."""
    from app.health import planned_changes  # the one reader of the plan's change lines

    return list(dict.fromkeys(planned_changes(plan)))


def homes(root: Path = ROOT) -> dict[tuple, list[str]]:
    """(kind, name[, table]) -> the deploy files of the plan that create it, e.g.
    ("function", "gateway.admit") -> ["sql/deploy/gateway_auth.sql"];
    ("policy", "risk_items_select_holder", "insurance.risk_items") -> [...]."""
    found: dict[tuple, list[str]] = {}
    for change in plan_changes(root / "sqitch.plan"):
        path = f"sql/deploy/{change}.sql"
        sql = masked((root / path).read_text())
        for kind, pattern in CREATED.items():
            for m in pattern.finditer(sql):
                key = (kind,) + tuple(g.lower() for g in m.groups())
                if path not in found.setdefault(key, []):
                    found[key].append(path)
    return found
