"""OAuth2 client credentials, shared by every insurer that takes a Bearer token from a token
endpoint (auth_config: tokenUrl, clientId, clientSecret, scope optional).

The token is cached until shortly before it expires; callers that need one at the same time
share one token request; after a 401 the orchestrator asks once for a new one (`stale`: the
token refused), and a token someone else already renewed is not renewed again.
"""
from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import time
from typing import Any

import httpx

from app.orchestrator.base import InsuranceAdapter, ProviderCallFailed, send_capped, status_error, transport_error
from app.orchestrator.contract import MALFORMED_RESPONSE, EmissionError, EmitContext
from app.orchestrator.model import StandardRiskItem

# A token is renewed this long before the identity provider says it expires (at most a
# tenth of its life).
TOKEN_EARLY_RENEWAL_SECONDS = 30


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
            # The provider's own text of a token-endpoint error is never kept: one that echoes the
            # form would put the client secret there in an encoding no mask foresees (URL-encoded,
            # base64 of Basic, JSON-escaped). The status, class and Retry-After stay.
            error = status_error(response, "identity provider")
            status = response.status_code
            message = (f"identity provider refused the credentials ({status})" if status == 401
                       else f"identity provider answered the token request with {status}")
            raise ProviderCallFailed(dataclasses.replace(error, message=message))
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


class OAuth2Adapter(InsuranceAdapter):
    """An adapter whose insurer wants `Authorization: Bearer <token>` from a client-credentials grant."""

    def __init__(self, auth_config: dict[str, Any], http: httpx.AsyncClient,
                 state: dict[str, Any] | None = None) -> None:
        super().__init__(auth_config, http, state)
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

    def auth_headers(self, ctx: EmitContext) -> dict[str, str]:
        return {"Authorization": f"Bearer {ctx.access_token}"}
