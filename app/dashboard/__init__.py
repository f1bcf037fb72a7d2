"""The dashboard surface: its typed RPC (/api/trpc, tRPC's wire protocol), its session
(/api/auth/login, /api/auth/logout) and the server-rendered back-office page (/backoffice).

The RPC's modules (pydantic for the procedures' inputs: about 8 MB with its models) are
imported at the RPC's first request, not at start: an API process that serves only holders
and partners never carries them (README "Memory").
"""
from __future__ import annotations

import importlib
from typing import Any

_TRPC_METHODS = ("on_get", "on_post", "on_head", "on_put", "on_patch", "on_delete", "on_options")
_SESSION_METHODS = ("on_post", "on_options")


class _Surface:
    """The dashboard's resources, built at the first request that needs one."""

    def __init__(self, services) -> None:
        self.services = services
        self._resources: dict[str, Any] = {}

    def get(self, name: str) -> Any:
        resource = self._resources.get(name)
        if resource is None:
            if not self._resources:
                auth = importlib.import_module("app.dashboard.auth")
                trpc = importlib.import_module("app.dashboard.resource").Trpc(self.services)
                self._resources.update(trpc=trpc, login=auth.Login(self.services),
                                       logout=auth.Logout(self.services))
            resource = self._resources[name]
        return resource


def _responder(surface: _Surface, name: str, method: str):
    async def responder(self, req, resp, **params) -> None:
        await getattr(surface.get(name), method)(req, resp, **params)
    responder.__name__ = method
    return responder


def _lazy(surface: _Surface, name: str, methods: tuple[str, ...]) -> Any:
    """A resource answering `methods` by delegating to the real one, imported on first use."""
    cls = type(f"Lazy_{name}", (), {m: _responder(surface, name, m) for m in methods})
    return cls()


def add_routes(app, services) -> None:
    surface = _Surface(services)
    trpc = _lazy(surface, "trpc", _TRPC_METHODS)
    app.add_route("/api/trpc", trpc)
    app.add_route("/api/trpc/{path}", trpc)

    async def not_found(req, resp, **params) -> None:
        await surface.get("trpc").not_found(req, resp, **params)
    app.add_sink(not_found, "/api/trpc/")
    app.add_route("/api/auth/login", _lazy(surface, "login", _SESSION_METHODS))
    app.add_route("/api/auth/logout", _lazy(surface, "logout", _SESSION_METHODS))

    from app.dashboard import backoffice
    backoffice.add_routes(app, services)
