"""The sandbox's development credentials, and the auth_config that points each provider at it.

These are not secrets: they open nothing but a sandbox on a developer's machine.
"""
from __future__ import annotations

from typing import Any

PROVIDER_A_API_KEY = "sbx-provider-a-key"
# PROVIDER_B agent accounts: agent code -> API key.
PROVIDER_B_AGENTS = {"SBX-AGENT-1": "sbx-provider-b-key-1", "SBX-AGENT-2": "sbx-provider-b-key-2"}
# Identity provider clients (client credentials): client id -> secret.
IDP_CLIENTS = {"sbx-mail-client": "sbx-mail-secret"}
TOKEN_TTL_SECONDS = 3600


def auth_configs(base_url: str) -> dict[str, dict[str, Any]]:
    """auth_config of each provider slug for a sandbox served at `base_url`."""
    base = base_url.rstrip("/")
    (agent1, key1), (agent2, key2) = PROVIDER_B_AGENTS.items()
    (client_id, client_secret), = IDP_CLIENTS.items()
    return {
        "PROVIDER_A": {"baseUrl": f"{base}/provider-a", "apiKey": PROVIDER_A_API_KEY},
        "PROVIDER_B": {"baseUrl": f"{base}/provider-b", "channels": [
            {"default": True, "agentCode": agent1, "apiKey": key1},
            {"packageUid": "sandbox-agent-2", "agentCode": agent2, "apiKey": key2},
        ]},
        "MAIL_PROVIDER": {"baseUrl": f"{base}/mail", "tokenUrl": f"{base}/idp/oauth/token",
                          "clientId": client_id, "clientSecret": client_secret,
                          "from": "Insurance <welcome@insurance.invalid>"},
    }


def chat_webhook_url(base_url: str) -> str:
    return base_url.rstrip("/") + "/chat/webhook"
