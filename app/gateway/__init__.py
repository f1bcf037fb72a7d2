"""The partner gateway: /api/gateway/{v1,v2,ia/v1,ia/v2,integrations/v1,integrations/v2}.

Every branch has a public authorize route and a protected validator; v1 and v2 add the
risk items (v2 with keyset pagination); the integrations branches add the channel's webhook
deliveries (webhook_deliveries.py). See auth.py for the tokens and the context that
the branch guards expose to handlers.
"""
from __future__ import annotations

from app.gateway.auth import Authorize, guard_for
from app.gateway.resources import Channel, RiskItem, RiskItems, Validator
from app.gateway.webhook_deliveries import WEBHOOK_BRANCHES, Redeliver, WebhookDeliveries

PREFIX = "/api/gateway"
# The branches, each with the secret that signs its tokens. The database's copy is the CHECK of
# insurance.channels.branches; tests/test_input_rules.py proves the two agree.
BRANCHES = {
    "v1": "AUTH_SECRET",
    "v2": "AUTH_SECRET_V2",
    "ia/v1": "AUTH_IA_SECRET",
    "ia/v2": "AUTH_IA_SECRET_V2",
    "integrations/v1": "AUTH_INTEGRATION_SECRET",
    "integrations/v2": "AUTH_INTEGRATION_SECRET_V2",
}
RISK_ITEM_BRANCHES = {"v1": False, "v2": True}  # branch -> keyset pagination


def document_branches():
    """The branches as app/openapi writes the gateway's operations out for each."""
    from app.openapi import Branches
    return Branches(dict(BRANCHES), dict(RISK_ITEM_BRANCHES))


def add_routes(app, services) -> None:
    for branch, tokens in services.gateway_tokens.items():
        guard = guard_for(branch, tokens)
        channel = Channel(guard, services.db, services.config.rate_limit_per_minute,
                          services.config.max_body_bytes)
        base = f"{PREFIX}/{branch}"
        app.add_route(f"{base}/auth/authorize", Authorize(guard, services.db))
        app.add_route(f"{base}/auth/validator", Validator(channel))
        if branch in RISK_ITEM_BRANCHES:
            app.add_route(f"{base}/risk-items", RiskItems(channel, keyset=RISK_ITEM_BRANCHES[branch]))
            app.add_route(f"{base}/risk-items/{{uid}}", RiskItem(channel))
        if branch in WEBHOOK_BRANCHES:
            app.add_route(f"{base}/webhook-deliveries", WebhookDeliveries(channel, keyset=WEBHOOK_BRANCHES[branch]))
            app.add_route(f"{base}/webhook-deliveries/{{id}}/redeliver",
                          Redeliver(channel, services.config.webhook_redeliveries_per_minute))
