"""The dashboard surface: its typed RPC (/api/trpc, tRPC's wire protocol), its session
(/api/auth/login, /api/auth/logout) and the server-rendered back-office page (/backoffice)."""
from __future__ import annotations


def add_routes(app, services) -> None:
    from app.dashboard import backoffice
    from app.dashboard.auth import Login, Logout
    from app.dashboard.resource import Trpc

    trpc = Trpc(services)
    app.add_route("/api/trpc", trpc)
    app.add_route("/api/trpc/{path}", trpc)
    app.add_sink(trpc.not_found, "/api/trpc/")
    app.add_route("/api/auth/login", Login(services))
    app.add_route("/api/auth/logout", Logout(services))
    backoffice.add_routes(app, services)
