"""MAIL_PROVIDER: sends the welcome pack by e-mail; it issues no policy.

auth_config: {"baseUrl": "...", "tokenUrl": "<identity provider token endpoint>",
              "clientId": "...", "clientSecret": "...", "scope": "optional",
              "from": "Insurance <welcome@example.com>",
              "channels": {"<partner channel uuid or package uid>": {"from": "...", "brand": "..."}}}

The access token comes from the identity provider by the OAuth2 client-credentials grant.
It is cached, shared and renewed as app/orchestrator/oauth2.py says. The message is rendered from
the StandardRiskItem with Jinja2 (HTML and text, HTML autoescaped) and posted to the
provider's messages API; the provider's `messageId` is the external id.
"""
from __future__ import annotations

import functools
from typing import Any

import httpx

from app.orchestrator.base import ProviderNotConfigured
from app.orchestrator.contract import EmissionResponse, EmitContext
from app.orchestrator.model import VARIANTS, MappingError, StandardRiskItem
from app.orchestrator.oauth2 import OAuth2Adapter


@functools.cache
def _templates():
    """(html, text) of the welcome pack, loaded at the first one: jinja2 stays out of a
    process that never sends it (docs/benchmarks.md "Memory")."""
    import jinja2
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("app.orchestrator", "templates"),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "html.j2"), default=False),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env.get_template("welcome_pack.html.j2"), env.get_template("welcome_pack.txt.j2")


class MailProvider(OAuth2Adapter):
    slug = "MAIL_PROVIDER"
    variants = VARIANTS

    def __init__(self, auth_config: dict[str, Any], http: httpx.AsyncClient,
                 state: dict[str, Any] | None = None) -> None:
        super().__init__(auth_config, http, state)
        self.url = self.url_setting("baseUrl", path="/v1/messages")
        self.sender = self.setting("from")
        channels = auth_config.get("channels") or {}
        if not isinstance(channels, dict) or not all(isinstance(c, dict) for c in channels.values()):
            raise ProviderNotConfigured("MAIL_PROVIDER auth_config.channels must map ids to objects")
        self.channels = channels

    def external_id(self, body: dict[str, Any]) -> Any:
        return body["messageId"]

    def message(self, item: StandardRiskItem) -> dict[str, Any]:
        """The welcome-pack message for the item's holder (or its authorized claimants)."""
        channel = self.channels.get(item.channel_id or "") or self.channels.get(item.package_uid or "") or {}
        holder = item.holder
        if holder is not None:
            to = [{"email": holder.email, "name": holder.name}]
        elif item.authorized_claimants:
            to = [{"email": e, "name": None} for e in item.authorized_claimants]
        else:
            raise MappingError("the item has no holder e-mail to send the welcome pack to")
        brand = channel.get("brand") or "Insurance"
        context = {"item": item, "holder_name": holder.name if holder else item.insured_name,
                   "brand": brand, "product": item.policy.variant_name or item.variant.title()}
        return {"from": channel.get("from") or self.sender, "to": to,
                "subject": f"{brand}: your {context['product']} policy {item.policy_uid}",
                "html": _templates()[0].render(context), "text": _templates()[1].render(context),
                "tags": ["welcome-pack"], "reference": item.uid}

    async def emit(self, item: StandardRiskItem, ctx: EmitContext) -> EmissionResponse:
        return await self.post(self.url, self.message(item), self.auth_headers(ctx), ctx)


ADAPTER = MailProvider
