"""The holder's routes: each verifies the post-sales JWT and calls one SQL function as
insurance_holder with the token's claims; the claimant RLS policies decide what it sees.
SQL builds the JSON; `send_raw` passes it through.
"""
from __future__ import annotations

import falcon

from app.db import HOLDER
from app.responses import send_raw
from app.tokens import invalid_token
from app.validation import json_object, path_id


class HolderResource:
    """Each responder checks the token first, then reads ids and body (never the other way)."""

    def __init__(self, services) -> None:
        self.db = services.db
        self.tokens = services.postsales_tokens
        self.max_body = services.config.max_body_bytes

    def holder(self, req: falcon.Request) -> str:
        """The claims (JSON) of the request's holder token: 400/401 for a missing or bad one."""
        verified = self.tokens.verify_header(req.get_header("Authorization"))
        if not isinstance(verified.claims.get("email"), str):
            raise invalid_token()
        return verified.claims_json

    async def call(self, claims: str, function: str, *args) -> str:
        return await self.db.call(HOLDER, claims, function, *args)

    async def body(self, req: falcon.Request) -> dict:
        return await json_object(req, self.max_body)


class MyRiskItems(HolderResource):
    async def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        send_raw(resp, await self.call(self.holder(req), "postsales.my_risk_items"))


class RiskItem(HolderResource):
    async def on_get(self, req: falcon.Request, resp: falcon.Response, riskItemId: str) -> None:
        claims = self.holder(req)
        send_raw(resp, await self.call(claims, "postsales.risk_item", path_id(riskItemId, "riskItemId")))

    async def on_patch(self, req: falcon.Request, resp: falcon.Response, riskItemId: str) -> None:
        claims = self.holder(req)
        item_id = path_id(riskItemId, "riskItemId")
        send_raw(resp, await self.call(claims, "postsales.update_risk_item", item_id, await self.body(req)))


class Beneficiaries(HolderResource):
    async def on_get(self, req: falcon.Request, resp: falcon.Response, riskItemId: str) -> None:
        claims = self.holder(req)
        send_raw(resp, await self.call(claims, "postsales.risk_item_beneficiaries",
                                       path_id(riskItemId, "riskItemId")))

    async def on_post(self, req: falcon.Request, resp: falcon.Response, riskItemId: str) -> None:
        claims = self.holder(req)
        item_id = path_id(riskItemId, "riskItemId")
        send_raw(resp, await self.call(claims, "postsales.add_beneficiary", item_id, await self.body(req)),
                 status=201)


class Beneficiary(HolderResource):
    async def on_patch(self, req: falcon.Request, resp: falcon.Response, riskItemId: str,
                       beneficiaryId: str) -> None:
        claims = self.holder(req)
        ids = path_id(riskItemId, "riskItemId"), path_id(beneficiaryId, "beneficiaryId")
        send_raw(resp, await self.call(claims, "postsales.update_beneficiary", *ids, await self.body(req)))

    async def on_delete(self, req: falcon.Request, resp: falcon.Response, riskItemId: str,
                        beneficiaryId: str) -> None:
        claims = self.holder(req)
        ids = path_id(riskItemId, "riskItemId"), path_id(beneficiaryId, "beneficiaryId")
        send_raw(resp, await self.call(claims, "postsales.remove_beneficiary", *ids))


class Variants(HolderResource):
    async def on_get(self, req: falcon.Request, resp: falcon.Response, riskItemId: str) -> None:
        claims = self.holder(req)
        send_raw(resp, await self.call(claims, "postsales.risk_item_variants", path_id(riskItemId, "riskItemId")))
