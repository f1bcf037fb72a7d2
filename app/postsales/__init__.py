"""The postsales surface: routes are added by add_routes(app, services)."""
from __future__ import annotations


def add_routes(app, services) -> None:
    """Adds this surface's routes (none yet)."""
