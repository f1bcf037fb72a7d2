"""The registry: upper-case provider slug -> adapter class."""
from __future__ import annotations

from app.orchestrator.base import InsuranceAdapter
from app.orchestrator.mail_provider import MailProvider
from app.orchestrator.provider_a import ProviderA
from app.orchestrator.provider_b import ProviderB

ADAPTERS: dict[str, type[InsuranceAdapter]] = {
    adapter.slug: adapter for adapter in (ProviderA, ProviderB, MailProvider)
}
