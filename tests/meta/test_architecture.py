"""The rooms of app/ and who may call whom, read from the code itself (its imports and its
string constants), so that the layout stays what docs/architecture.md says.

    app.app, app.asgi, app.__main__                      the process entry points
    surfaces (postsales, gateway, integrations, dashboard), the worker's wing (outbox), commands
    orchestrator (adapters, the emission pipeline), sandbox
    the core: config, db, errors, tokens, auth, cli, ...

An import may go down or sideways within its room, never up; no surface imports another;
nothing outside app/sandbox imports the sandbox (a double of the providers must share no code
with what it doubles); the orchestrator knows no surface and no HTTP framework; and no Python
but app/db.py and the backup tools (app/backup.py, app/recover.py: catalogs, and rows copied
between two databases) hold table SQL (everything else calls SQL functions by name).

The worker's wing (app/outbox) has floors of its own, as the API has create_app above its
resources: the queue and the HTTP clients, then the deliverers, then the loop, then the
composition root (build), then the commands; nothing imports a floor above its own. Across
app/ no two modules import each other, even through a function's lazy import (a lazy import
hides a circle, it does not remove it), and no two classes share a name.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

SURFACES = ("app.postsales", "app.gateway", "app.integrations", "app.dashboard")
ENTRY_POINTS = ("app.app", "app.asgi", "app.__main__")
HTTP_FRAMEWORKS = ("falcon", "uvicorn", "starlette", "fastapi", "aiohttp.web")
# Table SQL: a statement that reads or writes rows, written in Python.
# Who may hold it: app/db.py, and the backup tools, which read the catalogs of a cluster that
# may not have this schema yet (pg_settings, pg_stat_archiver) and copy rows between two
# databases (a side copy and the live one), which no SQL function of one database can do.
TABLE_SQL_ALLOWED = ("app.db", "app.backup", "app.recover")
TABLE_SQL = re.compile(r"\b(SELECT\s.+\sFROM|INSERT\s+INTO|UPDATE\s+\S+\s+SET|DELETE\s+FROM)\b", re.DOTALL)


def _under(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def room(module: str) -> int:
    """0 the core, 1 orchestrator and sandbox, 2 surfaces, the worker's wing and commands, 3 entry points."""
    if _under(module, *ENTRY_POINTS):
        return 3
    if _under(module, *SURFACES, "app.outbox", "app.commands"):
        return 2
    if _under(module, "app.orchestrator", "app.sandbox"):
        return 1
    return 0


def modules(root: Path) -> dict[str, Path]:
    found = {}
    for path in sorted((root / "app").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, module: str) -> set[str]:
    """Every module this file imports, at the top or inside a function."""
    names = set()
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)  # `from app import gateway`
    return names


def sql_strings(path: Path) -> list[tuple[int, str]]:
    """String constants that hold table SQL (docstrings aside)."""
    tree = ast.parse(path.read_text())
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [(n.lineno, n.value[:60]) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
            and TABLE_SQL.search(n.value)]


def violations(root: Path) -> list[str]:
    found = modules(root)
    problems = []
    for module, path in found.items():
        for name in sorted(imports(path, module)):
            if name.startswith("app.") and not any(_under(name, m) for m in found):
                continue  # `from app.x import name` of a function: its module is listed too
            surface = next((s for s in SURFACES if _under(module, s)), None)
            target = next((s for s in SURFACES if _under(name, s)), None)
            if surface and target and target != surface:
                problems.append(f"{module} imports {name}: a surface imports another surface")
            if _under(name, "app.sandbox") and not _under(module, "app.sandbox"):
                problems.append(f"{module} imports {name}: only the sandbox imports the sandbox")
            if _under(module, "app.orchestrator") and (target or _under(name, *HTTP_FRAMEWORKS)):
                problems.append(f"{module} imports {name}: the orchestrator knows no surface and no HTTP framework")
            if _under(module, "app.outbox") and target:
                problems.append(f"{module} imports {name}: the worker knows no surface")
            if name.startswith("app.") and name in found and room(name) > room(module):
                problems.append(f"{module} imports {name}: an import up a layer")
            if name in found and wing_floor(name) > wing_floor(module) >= 0:
                problems.append(f"{module} imports {name}: an import up a floor of the worker's wing")
        if module not in TABLE_SQL_ALLOWED:
            problems += [f"{module}:{line} holds table SQL: {text!r}" for line, text in sql_strings(path)]
    problems += [f"an import circle: {' -> '.join(circle)}" for circle in circles(found)]
    problems += [f"two classes named {name}: {', '.join(where)}" for name, where in same_class_names(found).items()]
    return problems


# The worker's wing, floor by floor (app/outbox/__init__.py is its door, on no floor).
WING_FLOORS = (("app.outbox.queue", "app.outbox.http"), ("app.outbox.webhooks", "app.outbox.deliverers"),
               ("app.outbox.worker",), ("app.outbox.build",), ("app.outbox.commands",))


def wing_floor(module: str) -> int:
    """The floor of a module of the worker's wing; -1 outside it. A new module of the wing must
    be given a floor here."""
    for floor, members in enumerate(WING_FLOORS):
        if module in members:
            return floor
    return len(WING_FLOORS) if _under(module, "app.outbox") and module != "app.outbox" else -1


def module_edges(root_modules: dict[str, Path]) -> dict[str, set[str]]:
    """Which app modules each one imports (at the top or in a function). `from package import
    module` is an edge to the module alone: its package's __init__ may load it lazily without
    a circle."""
    edges: dict[str, set[str]] = {}
    for module, path in root_modules.items():
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
                submodules = {f"{base}.{a.name}" for a in node.names} & set(root_modules)
                found.update(submodules or {base})
                if len(submodules) < len(node.names):
                    found.add(base)
        edges[module] = {name for name in found if name in root_modules and name != module}
    return edges


def circles(root_modules: dict[str, Path]) -> list[list[str]]:
    """Every set of modules that import each other, each as one circle (Tarjan's strongly
    connected components)."""
    edges = module_edges(root_modules)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for name in sorted(edges[module]):
            if name not in index:
                visit(name)
                low[module] = min(low[module], low[name])
            elif name in stack:
                low[module] = min(low[module], index[name])
        if low[module] == index[module]:
            component = []
            while True:
                name = stack.pop()
                component.append(name)
                if name == module:
                    break
            if len(component) > 1:
                found.append(sorted(component) + [min(component)])

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return found


def same_class_names(root_modules: dict[str, Path]) -> dict[str, list[str]]:
    """Class names defined in more than one module of app/ (a reader, a log or a traceback that
    says `Deliverer` must name one thing)."""
    where: dict[str, list[str]] = {}
    for module, path in root_modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(module)
    return {name: modules_ for name, modules_ in where.items() if len(modules_) > 1}


def test_the_import_rules_hold():
    assert violations(ROOT) == []


@pytest.mark.parametrize("module, source, complaint", [
    ("app/gateway/x.py", "from app.postsales import resources\n", "a surface imports another surface"),
    ("app/dashboard/x.py", "def f():\n    from app.integrations.resources import SPECS\n", "another surface"),
    ("app/orchestrator/x.py", "import falcon\n", "no HTTP framework"),
    ("app/orchestrator/x.py", "from app.dashboard import router\n", "knows no surface"),
    ("app/commands/x.py", "from app.sandbox.credentials import auth_configs\n", "only the sandbox"),
    ("app/tokens2.py", "from app.dashboard.passwords import PASSWORD_HASHER\n", "up a layer"),
    ("app/gateway/x.py", "Q = 'SELECT id FROM insurance.channels WHERE id = $1'\n", "table SQL"),
    ("app/worker2.py", "Q = '''UPDATE insurance.channels\n   SET active = false'''\n", "table SQL"),
    ("app/outbox/queue.py", "from app.outbox.worker import Worker\n", "up a floor of the worker's wing"),
    ("app/outbox/worker.py", "def build():\n    from app.outbox.build import build_worker\n", "up a floor"),
    ("app/outbox/deliverers.py", "from app.dashboard import router\n", "the worker knows no surface"),
    ("app/db.py", "def busy():\n    from app.errors import database_busy\n", "an import circle"),
    ("app/outbox/webhooks.py", "class Deliverer:\n    pass\n", "two classes named Deliverer"),
    ("app/config.py", "from app.outbox import build\n", "up a layer"),
])
def test_each_rule_catches_what_it_forbids(tmp_path, module, source, complaint):
    for package in ("app", "app/gateway", "app/dashboard", "app/orchestrator", "app/commands", "app/postsales",
                    "app/sandbox", "app/integrations", "app/outbox"):
        (tmp_path / package).mkdir(parents=True, exist_ok=True)
        (tmp_path / package / "__init__.py").write_text("")
    for name in ("app/postsales/resources.py", "app/integrations/resources.py", "app/dashboard/router.py",
                 "app/dashboard/passwords.py", "app/sandbox/credentials.py", "app/outbox/worker.py",
                 "app/outbox/build.py", "app/errors.py", "app/db.py", "app/config.py"):
        (tmp_path / name).write_text("")
    (tmp_path / "app/errors.py").write_text("from app.db import unavailable\n")
    (tmp_path / "app/outbox/deliverers.py").write_text("class Deliverer:\n    pass\n")
    (tmp_path / module).write_text(source)
    assert any(complaint in v for v in violations(tmp_path)), violations(tmp_path)
