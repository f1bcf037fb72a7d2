"""The registry: upper-case provider slug -> adapter class, and the check of an auth_config
against its adapter (the command line refuses what could only fail at the first emission)."""
from __future__ import annotations

from typing import Any

from app.orchestrator.base import InsuranceAdapter, ProviderNotConfigured
from app.orchestrator.mail_provider import MailProvider
from app.orchestrator.provider_a import ProviderA
from app.orchestrator.provider_b import ProviderB

ADAPTERS: dict[str, type[InsuranceAdapter]] = {
    adapter.slug: adapter for adapter in (ProviderA, ProviderB, MailProvider)
}


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
