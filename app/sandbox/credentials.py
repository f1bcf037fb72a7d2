"""The sandbox's development credentials, and the auth_config that points each provider at it,
both read from the insurers' descriptions (descriptions.py).

These are not secrets: they open nothing but a sandbox on a developer's machine.
"""
from __future__ import annotations

from typing import Any

from app.sandbox.descriptions import descriptions

_BY_SLUG = {d.slug: d for d in descriptions()}

PROVIDER_A_API_KEY = next(iter(_BY_SLUG["PROVIDER_A"].auth["keys"]))
# PROVIDER_B agent accounts: agent code -> API key.
PROVIDER_B_AGENTS = {v["agentCode"]: k for k, v in _BY_SLUG["PROVIDER_B"].auth["keys"].items()}
# The shared identity provider's clients (client credentials): client id -> secret.
IDP_CLIENTS = dict(_BY_SLUG["MAIL_PROVIDER"].auth["clients"])


def auth_configs(base_url: str) -> dict[str, dict[str, Any]]:
    """auth_config of each described insurer for a sandbox served at `base_url`."""
    return {d.slug: d.config_for(base_url) for d in descriptions()}


def chat_webhook_url(base_url: str) -> str:
    return base_url.rstrip("/") + "/chat/webhook"
