"""Resources built at their first request, so that a surface a process may never serve (the
dashboard's RPC and back-office: pydantic models, argon2, jinja2, about 10 MB) costs no memory
until it does (docs/benchmarks.md "Memory").

    app.add_route("/backoffice", lazy(loader, responders("app.dashboard.backoffice.resources", "Pages")),
                  suffix="home")

Falcon maps HTTP methods to the `on_*` attributes a resource has when the route is added; a
lazy resource has exactly the responders of the class it stands for (read from its source,
not imported, or named), each delegating to the real resource.
"""
from __future__ import annotations

import ast
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any


def responders(module: str, cls: str) -> tuple[str, ...]:
    """The on_* responders that `cls` defines in `module`'s source (its bases not included)."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, module
    for node in ast.parse(Path(spec.origin).read_text()).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            names = [f.name for f in node.body
                     if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name.startswith("on_")]
            names += [t.id for a in node.body if isinstance(a, ast.Assign)
                      for t in a.targets if isinstance(t, ast.Name) and t.id.startswith("on_")]
            return tuple(names)
    raise LookupError(f"{module}.{cls} not found")


class Loader:
    """Builds the real resources once, at the first request to any of them."""

    def __init__(self, build: Callable[[], dict[str, Any]]) -> None:
        self._build = build
        self._resources: dict[str, Any] | None = None

    def __getitem__(self, name: str) -> Any:
        if self._resources is None:
            self._resources = self._build()
        return self._resources[name]


def lazy(loader: Loader, name: str, names: tuple[str, ...]) -> Any:
    """A resource with the responders `names`, each delegating to `loader[name]`'s."""
    def responder(method: str):
        async def respond(self, req, resp, **params) -> None:
            await getattr(loader[name], method)(req, resp, **params)
        respond.__name__ = method
        return respond
    return type(f"Lazy_{name}", (), {m: responder(m) for m in names})()
