"""The README is the front door (issue 21): short enough to read in the first hour, with the
reference in docs/, and every link among them leads somewhere."""
from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

from app.health import planned_changes
from tests.conftest import ROOT
from tests.release import parse_plan, script_names


def test_the_readme_is_a_front_door():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    for must in ("make run", "make test", "<!-- walkthrough:start -->", ".venv/bin/python -m app", "## Architecture"):
        assert must in readme, must
    for doc in ("docs/configuration.md", "docs/api.md", "docs/operations.md", "docs/benchmarks.md",
                "docs/architecture.md", "docs/sql-reference.md"):
        assert f"]({doc})" in readme, f"README does not link {doc}"


def test_every_relative_link_of_the_docs_leads_to_a_file_and_a_heading():
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        for target in re.findall(r"\]\(([^)#:\s]*)(#[^)\s]*)?\)", page.read_text()):
            path, anchor = target
            file = (page.parent / path).resolve() if path else page
            assert file.exists(), f"{page.name} links {path}, which does not exist"
            if anchor and file.suffix == ".md":
                headings = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                            for h in re.findall(r"^#+ (.*)$", file.read_text(), re.MULTILINE)}
                assert anchor[1:] in headings, f"{page.name} links {path}{anchor}: no such heading"


def test_the_docs_point_only_inside_the_repository():
    """Issue 30: README linked ../shared/... and docs/ cited a design document outside the
    repository, which its reader does not have. Every path a page names (a link or a `code` path) stays inside."""
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    if (ROOT / "CHANGELOG.md").exists():
        pages.append(ROOT / "CHANGELOG.md")
    for page in pages:
        text = page.read_text()
        assert not re.search(r"\b(DESIGN|STYLE)\.md\b", text), f"{page.name} cites a document outside the repository"
        for path in re.findall(r"\]\(([^)#\s]+)", text) + re.findall(r"`(\.\./[^`\s]+)`", text):
            if re.match(r"^[a-z]+:", path):
                continue  # a URL, not a path
            resolved = (page.parent / path).resolve()
            assert resolved.is_relative_to(ROOT), f"{page.name} points outside the repository: {path}"


def test_the_readme_says_what_the_walkthrough_does_with_the_back_office():
    """Issue 42: the README said the walkthrough "opens" the back-office; it prints the link."""
    readme = (ROOT / "README.md").read_text()
    said, block = readme.split("<!-- walkthrough:start -->")[0], readme.split("<!-- walkthrough:start -->")[1]
    intro = " ".join(said.split("## A newcomer's first ten minutes")[1].split())
    assert "opens the back-office" not in intro
    assert "prints the back-office link" in intro
    assert 'echo "now open $API/backoffice' in block, "the block prints the link, as the README says"


# ------------------------------------------------------------------ names in code comments lead somewhere

CODE_DIRS = ("sql", "app", "bench", "tests", "scripts")
PATH_IN_TEXT = re.compile(r"(?<![\w/.$<{*@-])((?:[\w.-]+/)*[\w-]+\.(?:py|sql|md|sh|psql|toml|json|ya?ml|cfg|ini|plan|js))\b")


# What a command writes and git ignores (.gitignore): named in comments, never committed.
IGNORED_OUTPUTS = {"bench/results.json", "bench/compare.json"}


def repository_files() -> list[str]:
    return subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True,
                          check=True).stdout.split()


def changes_gone() -> set[str]:
    """Every change name that a line of sqitch.plan ever had (its git history) and has no more."""
    log = subprocess.run(["git", "-C", str(ROOT), "log", "-p", "--format=", "--", "sqitch.plan"],
                         capture_output=True, text=True, check=True).stdout
    ever = {m.group(1) for m in re.finditer(r"^[-+]([a-z][a-z0-9_]*) ", log, re.MULTILINE)}
    return ever - set(planned_changes(ROOT / "sqitch.plan"))


def frozen_scripts() -> set[str]:
    """sql/ scripts of released changes: frozen (tests/meta/test_release.py), so a name in their
    comments cannot be corrected; only the scripts that can still change are read. Every
    `<change>@<tag>.sql` is a released copy, whatever tag sqitch named it after."""
    entries = parse_plan((ROOT / "sqitch.plan").read_text())
    tags = [i for i, e in enumerate(entries) if e.is_tag]
    newest = tags[-1] if tags else -1
    frozen = set()
    for position, _, stem in script_names(entries):
        if position < newest:
            frozen |= {f"sql/{kind}/{stem}.sql" for kind in ("deploy", "revert", "verify")}
    frozen |= {f"sql/{p.parent.name}/{p.name}" for p in (ROOT / "sql").glob("*/*@*.sql")}
    return frozen


def comments(path: Path) -> list[tuple[int, str]]:
    """(line, text) of the comments of a source file: `--` and /* */ in SQL, `#` and docstrings in
    Python, `#` in shell."""
    text = path.read_text(errors="replace")
    found = []
    if path.suffix in (".sql", ".psql"):
        for m in re.finditer(r"--[^\n]*|/\*.*?\*/", text, re.DOTALL):
            found.append((text.count("\n", 0, m.start()) + 1, m.group(0)))
    elif path.suffix == ".py":
        # `#` comments (those before any quote on their line: cheap, and a `#` in a string is no
        # comment) and the docstrings of the module, its classes and functions.
        for m in re.finditer(r"^[^'\"#\n]*(#[^\n]*)", text, re.MULTILINE):
            found.append((text.count("\n", 0, m.start()) + 1, m.group(1)))
        nodes = [ast.parse(text)]
        while nodes:
            node = nodes.pop()
            if doc := ast.get_docstring(node, clean=False):
                found.append((node.body[0].lineno, doc))
            nodes += [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    elif path.suffix == ".sh":
        found += [(i, line) for i, line in enumerate(text.splitlines(), 1) if line.lstrip().startswith("#")]
    return found


def database_words(files: list[str]) -> set[str]:
    """Every word of the schema's picture (sql/schema/): a name that is also a database
    object's (a function, a table) is the object's, not a change's."""
    return set(re.findall(r"\b[a-z][a-z0-9_]+\b", " ".join(
        (ROOT / f).read_text() for f in files if f.startswith("sql/schema/"))))


def misleading_names(path: Path, text_comments: list[tuple[int, str]], files: list[str], gone: set[str],
                     objects: set[str] = frozenset()) -> list[str]:
    basenames = {f.rsplit("/", 1)[-1] for f in files}
    problems = []
    for line, comment in text_comments:
        if re.search(r"\b(DESIGN|STYLE)\.md\b", comment):
            problems.append(f"{path}:{line}: cites a document outside the repository")
        for name in PATH_IN_TEXT.findall(comment):
            if name in ("DESIGN.md", "STYLE.md"):
                continue
            known = (name in basenames if "/" not in name else
                     any(f == name or f.endswith("/" + name) for f in files) or (path.parent / name).exists())
            known = known or name in IGNORED_OUTPUTS
            if not known:
                problems.append(f"{path}:{line}: names {name}, which is no file of the repository")
        words = set(re.findall(r"\b[a-z][a-z0-9_]+\b", comment))
        for name in sorted(words & gone - objects):
            problems.append(f"{path}:{line}: names {name}, a sqitch change that no longer exists")
    return problems


def test_code_comments_name_files_and_changes_that_exist():
    files = repository_files()
    gone, frozen, objects = changes_gone(), frozen_scripts(), database_words(files)
    problems = []
    for name in files:
        if not name.startswith(tuple(d + "/" for d in CODE_DIRS)) or name in frozen:
            continue
        path = ROOT / name
        if path.suffix in (".py", ".sql", ".psql", ".sh") and path.exists():
            problems += misleading_names(Path(name), comments(path), files, gone, objects)
    assert problems == [], "\n".join(problems)


def test_a_comment_naming_a_gone_change_or_a_missing_file_is_found():
    files = ["app/db.py", "sql/deploy/risk_items.sql"]
    found = misleading_names(Path("sql/deploy/x.sql"), [
        (1, "-- the claimant policies of claimant_rls decide"), (2, "-- see app/db.py and risk_items.sql"),
        (3, "-- as DESIGN.md §7 says"), (4, "-- app/gone.py holds it")], files, {"claimant_rls"})
    assert found == ["sql/deploy/x.sql:1: names claimant_rls, a sqitch change that no longer exists",
                     "sql/deploy/x.sql:3: cites a document outside the repository",
                     "sql/deploy/x.sql:4: names app/gone.py, which is no file of the repository"]
    assert "claimant_rls" in changes_gone()  # the history knows it: it was a change once
