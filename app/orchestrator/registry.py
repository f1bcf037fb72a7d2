"""The registry: upper-case provider slug -> adapter class, found in app/orchestrator/insurers/
(every module there declares `ADAPTER`), and the check of an auth_config against its adapter
(the command line refuses what could only fail at the first emission)."""
from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from app.orchestrator import insurers
from app.orchestrator.base import InsuranceAdapter, ProviderNotConfigured


def discover(package=insurers) -> dict[str, type[InsuranceAdapter]]:
    """slug -> adapter of every module of `package`; two modules claiming one slug is an error."""
    found: dict[str, type[InsuranceAdapter]] = {}
    for module in pkgutil.iter_modules(package.__path__):
        adapter = getattr(importlib.import_module(f"{package.__name__}.{module.name}"), "ADAPTER", None)
        if adapter is None:
            raise ImportError(f"{package.__name__}.{module.name} declares no ADAPTER")
        if adapter.slug in found:
            raise ImportError(f"two adapters claim {adapter.slug}")
        found[adapter.slug] = adapter
    return dict(sorted(found.items()))


ADAPTERS: dict[str, type[InsuranceAdapter]] = discover()


def unknown_slug(slug: str) -> str | None:
    """Why `slug` names no adapter (with the slugs that do), or None when it names one."""
    if slug in ADAPTERS:
        return None
    return f"{slug!r} is not a provider; known providers: {', '.join(sorted(ADAPTERS))}"


def config_problem(slug: str, auth_config: dict[str, Any]) -> str | None:
    """Why the adapter of `slug` cannot use `auth_config` (its own validation, as at an
    emission), or None when it can. No HTTP client is made: building an adapter only reads."""
    problem = unknown_slug(slug)
    if problem is not None:
        return problem
    try:
        ADAPTERS[slug](auth_config, http=None, state={})  # type: ignore[arg-type]
    except ProviderNotConfigured as exc:
        return str(exc)
    return None
