"""The dashboard surface: its typed RPC (/api/trpc, tRPC's wire protocol) and its session
(/api/auth/login, /api/auth/logout)."""
from __future__ import annotations


def add_routes(app, services) -> None:
    from app.dashboard.auth import Login, Logout
    from app.dashboard.resource import Trpc

    trpc = Trpc(services)
    app.add_route("/api/trpc", trpc)
    app.add_route("/api/trpc/{path}", trpc)
    app.add_sink(trpc.not_found, "/api/trpc/")
    app.add_route("/api/auth/login", Login(services))
    app.add_route("/api/auth/logout", Logout(services))
