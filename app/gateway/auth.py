"""Gateway authentication: the public authorize route and one guard per branch family.

A channel exchanges its API key (`x-api-key`) for a token of the branch in the URL:
signed with that branch's secret, `aud` = `gateway/<branch>`, `sub` = the channel id. The
`bearer` hook (app/auth.py) verifies it with the branch's tokens (a token of another branch
fails on the secret and, where two secrets were set equal, on the `aud`) and puts the
VerifiedToken on `req.context.identity`. A guard describes its branch family:

    guard.headers(claims)  the internal headers of the branch family:
        x-channel-id       every branch: the channel id
        x-ai-api-key       ia/*: ai_keys["api_key"] of the IAPayload (None when unset)
        x-insurer-id       integrations/*: insurer_id of the IntegrationPayload
        x-webhooks         integrations/*: the webhooks of the IntegrationPayload (JSON text)

Token claims beyond the registered ones: `branch`, `gen` (the API key's generation: a rotated
key or a branch taken from the channel kills its tokens at once, checked by gateway.admit in
the route's own SQL call), `channel` {id, name}; ia tokens add
`ai_keys` (IAPayload = channel + ai_keys); integrations tokens add `webhooks` and
`insurer_id` (IntegrationPayload).
"""
from __future__ import annotations

import hashlib
from typing import Any

import falcon
import orjson

from app import db
from app.errors import ApiError
from app.responses import send
from app.tokens import TokenService


class BranchGuard:
    """Verifies the bearer of one branch; the base family (v1, v2) exposes x-channel-id."""

    def __init__(self, branch: str, tokens: TokenService) -> None:
        self.branch = branch
        self.tokens = tokens

    def payload(self, channel: dict[str, Any]) -> dict[str, Any]:
        """The family's claims, from the channel context that gateway.authorize returns."""
        return {}

    def headers(self, claims: dict[str, Any]) -> dict[str, Any]:
        return {"x-channel-id": claims["sub"]}

    def issue(self, channel: dict[str, Any]) -> str:
        return self.tokens.issue(channel["id"], branch=self.branch, gen=channel["gen"],
                                 channel={"id": channel["id"], "name": channel["name"]},
                                 **self.payload(channel))


class IaGuard(BranchGuard):
    """ia/v1, ia/v2: the IAPayload carries the channel's AI service keys."""

    def payload(self, channel: dict[str, Any]) -> dict[str, Any]:
        return {"ai_keys": channel.get("ia_keys") or {}}

    def headers(self, claims: dict[str, Any]) -> dict[str, Any]:
        return {**super().headers(claims),
                "x-ai-api-key": (claims.get("ai_keys") or {}).get("api_key")}


class IntegrationsGuard(BranchGuard):
    """integrations/v1, integrations/v2: the IntegrationPayload (webhooks, insurer_id)."""

    def payload(self, channel: dict[str, Any]) -> dict[str, Any]:
        given = channel.get("integration_payload") or {}
        return {"webhooks": given.get("webhooks") or [], "insurer_id": given.get("insurer_id")}

    def headers(self, claims: dict[str, Any]) -> dict[str, Any]:
        return {**super().headers(claims),
                "x-insurer-id": claims.get("insurer_id"),
                "x-webhooks": orjson.dumps(claims.get("webhooks") or []).decode()}


def guard_for(branch: str, tokens: TokenService) -> BranchGuard:
    family = branch.split("/", 1)[0]
    cls = {"ia": IaGuard, "integrations": IntegrationsGuard}.get(family, BranchGuard)
    return cls(branch, tokens)


class Authorize:
    """GET /{branch}/auth/authorize: x-api-key -> a token of this branch (public)."""

    def __init__(self, guard: BranchGuard, database: db.Database) -> None:
        self.guard = guard
        self.db = database

    async def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        key = req.get_header("x-api-key")
        if not key:
            raise ApiError(400, "MISSING_API_KEY", "Missing API key")
        channel = orjson.loads(await self.db.call(
            db.ANON, None, "gateway.authorize", hashlib.sha256(key.encode()).digest(), self.guard.branch))
        send(resp, {"access_token": self.guard.issue(channel), "token_type": "Bearer",
                    "expires_in": self.guard.tokens.lifetime})
