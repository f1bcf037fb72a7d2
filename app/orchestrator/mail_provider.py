"""MAIL_PROVIDER: sends the welcome pack by e-mail; it issues no policy.

auth_config: {"baseUrl": "...", "tokenUrl": "<identity provider token endpoint>",
              "clientId": "...", "clientSecret": "...", "scope": "optional",
              "from": "Insurance <welcome@example.com>",
              "channels": {"<partner channel uuid or package uid>": {"from": "...", "brand": "..."}}}

The access token comes from the identity provider by the OAuth2 client-credentials grant.
It is cached until shortly before it expires, and concurrent callers share one token
request; after a 401 the orchestrator asks for a new one once. The message is rendered from
the StandardRiskItem with Jinja2 (HTML and text, HTML autoescaped) and posted to the
provider's messages API; the provider's `messageId` is the external id.
"""
from __future__ import annotations

import asyncio
import functools
import hashlib
import time
from typing import Any

import httpx

from app.orchestrator.base import (
    InsuranceAdapter, ProviderCallFailed, ProviderNotConfigured, send_capped, status_error, transport_error)
from app.orchestrator.contract import MALFORMED_RESPONSE, EmissionError, EmissionResponse, EmitContext
from app.orchestrator.model import MappingError, StandardRiskItem

# A token is renewed this long before the identity provider says it expires.
TOKEN_EARLY_RENEWAL_SECONDS = 30

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


class ClientCredentials:
    """One client's token: cached until shortly before expiry; one request at a time."""

    def __init__(self, http: httpx.AsyncClient, token_url: str, client_id: str, client_secret: str,
                 scope: str | None) -> None:
        self.http = http
        self.token_url = token_url
        self.form = {"grant_type": "client_credentials", "client_id": client_id,
                     "client_secret": client_secret, **({"scope": scope} if scope else {})}
        self.token: str | None = None
        self.expires_at = 0.0
        self._pending: asyncio.Future[str] | None = None

    async def get(self, stale: str | None = None) -> str:
        """The current token; a new one when it expires soon or equals `stale` (refused)."""
        if self.token is not None and self.token != stale and time.monotonic() < self.expires_at:
            return self.token
        if self._pending is None:
            self._pending = asyncio.ensure_future(self._fetch())
            self._pending.add_done_callback(self._clear)
        return await asyncio.shield(self._pending)

    def _clear(self, future: asyncio.Future) -> None:
        self._pending = None
        if not future.cancelled():
            future.exception()  # retrieved: a failed fetch is re-raised to its awaiters only

    async def _fetch(self) -> str:
        try:
            response, _ = await send_capped(self.http, self.http.build_request(
                "POST", self.token_url, data=self.form, headers={"Accept": "application/json"}))
        except httpx.HTTPError as exc:
            raise ProviderCallFailed(transport_error(exc, "identity provider")) from None
        if not response.is_success:
            raise ProviderCallFailed(status_error(response, "identity provider"))
        try:
            body = response.json()
            token, ttl = body["access_token"], float(body.get("expires_in", 300))
        except (ValueError, KeyError, TypeError):
            raise ProviderCallFailed(EmissionError(
                MALFORMED_RESPONSE, "the identity provider answered a body we cannot read", True,
                response.status_code)) from None
        if not isinstance(token, str) or not token:
            raise ProviderCallFailed(EmissionError(
                MALFORMED_RESPONSE, "the identity provider answered no access token", True, response.status_code))
        self.token = token
        self.expires_at = time.monotonic() + max(0.0, ttl - min(TOKEN_EARLY_RENEWAL_SECONDS, ttl / 10))
        return token


class MailProvider(InsuranceAdapter):
    slug = "MAIL_PROVIDER"

    def __init__(self, auth_config: dict[str, Any], http: httpx.AsyncClient,
                 state: dict[str, Any] | None = None) -> None:
        super().__init__(auth_config, http, state)
        self.url = self.url_setting("baseUrl", path="/v1/messages")
        self.sender = self.setting("from")
        channels = auth_config.get("channels") or {}
        if not isinstance(channels, dict) or not all(isinstance(c, dict) for c in channels.values()):
            raise ProviderNotConfigured("MAIL_PROVIDER auth_config.channels must map ids to objects")
        self.channels = channels
        token_url, client_id, secret = (str(self.url_setting("tokenUrl")), self.setting("clientId"),
                                        self.setting("clientSecret"))
        # The token survives config reloads as long as the client stays the same.
        key = f"token:{token_url}:{client_id}:{hashlib.sha256(secret.encode()).hexdigest()}"
        if key not in self.state:
            self.state.clear()
            self.state[key] = ClientCredentials(http, token_url, client_id, secret, auth_config.get("scope"))
        self.credentials: ClientCredentials = self.state[key]

    async def access_token(self, item: StandardRiskItem, stale: str | None = None) -> str | None:
        return await self.credentials.get(stale)

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
        return await self.post(self.url, self.message(item), {"Authorization": f"Bearer {ctx.access_token}"}, ctx)
