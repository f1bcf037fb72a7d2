"""The holder's routes: each verifies the post-sales JWT and calls one SQL function as
insurance_holder with the token's claims; the claimant RLS policies decide what it sees.
SQL builds the JSON; `send_raw` passes it through.
"""
from __future__ import annotations

import falcon

from app.db import HOLDER
from app.postsales.validation import json_object, path_id
from app.responses import send_raw
from app.tokens import invalid_token


class HolderResource:
    def __init__(self, services) -> None:
        self.db = services.db
        self.tokens = services.postsales_tokens

    async def call(self, req: falcon.Request, function: str, *args, body: bool = False) -> str:
        """`function(*args)` as the token's holder: 400/401 for a missing or bad token. With
        `body`, the JSON object body is the last argument, read only once the token is good."""
        verified = self.tokens.verify_header(req.get_header("Authorization"))
        if not isinstance(verified.claims.get("email"), str):
            raise invalid_token()
        if body:
            args = (*args, await json_object(req))
        return await self.db.call(HOLDER, verified.claims_json, function, *args)


class MyRiskItems(HolderResource):
    async def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        send_raw(resp, await self.call(req, "postsales.my_risk_items"))


class RiskItem(HolderResource):
    async def on_get(self, req: falcon.Request, resp: falcon.Response, riskItemId: str) -> None:
        send_raw(resp, await self.call(req, "postsales.risk_item", path_id("riskItemId", riskItemId)))

    async def on_patch(self, req: falcon.Request, resp: falcon.Response, riskItemId: str) -> None:
        item_id = path_id("riskItemId", riskItemId)
        send_raw(resp, await self.call(req, "postsales.update_risk_item", item_id, body=True))


class Beneficiaries(HolderResource):
    async def on_get(self, req: falcon.Request, resp: falcon.Response, riskItemId: str) -> None:
        send_raw(resp, await self.call(req, "postsales.risk_item_beneficiaries",
                                       path_id("riskItemId", riskItemId)))

    async def on_post(self, req: falcon.Request, resp: falcon.Response, riskItemId: str) -> None:
        item_id = path_id("riskItemId", riskItemId)
        send_raw(resp, await self.call(req, "postsales.add_beneficiary", item_id, body=True),
                 status=201)


class Beneficiary(HolderResource):
    async def on_patch(self, req: falcon.Request, resp: falcon.Response, riskItemId: str,
                       beneficiaryId: str) -> None:
        ids = path_id("riskItemId", riskItemId), path_id("beneficiaryId", beneficiaryId)
        send_raw(resp, await self.call(req, "postsales.update_beneficiary", *ids, body=True))

    async def on_delete(self, req: falcon.Request, resp: falcon.Response, riskItemId: str,
                        beneficiaryId: str) -> None:
        ids = path_id("riskItemId", riskItemId), path_id("beneficiaryId", beneficiaryId)
        send_raw(resp, await self.call(req, "postsales.remove_beneficiary", *ids))


class Variants(HolderResource):
    async def on_get(self, req: falcon.Request, resp: falcon.Response, riskItemId: str) -> None:
        send_raw(resp, await self.call(req, "postsales.risk_item_variants", path_id("riskItemId", riskItemId)))
