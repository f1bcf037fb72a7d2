"""The dashboard surface: its typed RPC (/api/trpc, tRPC's wire protocol), its session
(/api/auth/login, /api/auth/logout) and the server-rendered back-office page (/backoffice).

Its modules are imported at the surface's first request (app/lazy.py): an API process that
serves only holders and partners never carries them.
"""
from __future__ import annotations

from app.lazy import Loader, lazy

# Trpc, Login and Logout inherit responders (Preflight.on_options): named here.
_TRPC = ("on_get", "on_post", "on_head", "on_put", "on_patch", "on_delete", "on_options")
_SESSION = ("on_post", "on_options")


def add_routes(app, services) -> None:
    def build() -> dict:
        from app.dashboard.auth import Login, Logout
        from app.dashboard.resource import Trpc
        return {"trpc": Trpc(services), "login": Login(services), "logout": Logout(services)}

    loader = Loader(build)
    trpc = lazy(loader, "trpc", _TRPC)
    app.add_route("/api/trpc", trpc)
    app.add_route("/api/trpc/{path}", trpc)

    async def not_found(req, resp, **params) -> None:
        await loader["trpc"].not_found(req, resp, **params)
    app.add_sink(not_found, "/api/trpc/")
    app.add_route("/api/auth/login", lazy(loader, "login", _SESSION))
    app.add_route("/api/auth/logout", lazy(loader, "logout", _SESSION))

    from app.dashboard import backoffice
    backoffice.add_routes(app, services)
