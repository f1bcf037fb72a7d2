"""The holder's routes: the `bearer` hook verifies the post-sales JWT, and each responder
calls one SQL function as insurance_holder with the token's claims; the claimant RLS
policies decide what it sees. SQL builds the JSON; `send_raw` passes it through.
"""
from __future__ import annotations

import falcon

from app.auth import bearer
from app.responses import send_raw
from app.validation import item_ref as path_item
from app.validation import json_object, path_id


class HolderResource:
    """A holder route; each subclass is wrapped in the `bearer` hook (falcon.before wraps the
    responders a class defines, not those of its subclasses)."""

    def __init__(self, services) -> None:
        self.db = services.db
        self.credential = services.postsales_tokens
        self.max_body = services.config.max_body_bytes

    def body(self, req: falcon.Request):
        """The JSON object of the body (MAX_BODY_BYTES), read after the hook checked the token."""
        return json_object(req, self.max_body)

    def call(self, req: falcon.Request, function: str, *args):
        """`function(*args)` as the token's holder."""
        return self.db.call_as(req.context.identity, function, *args)

    def read(self, req: falcon.Request, function: str, *args):
        """`call` of a function that only reads: on the standby of READ_DATABASE_URL when there
        is one and it has replayed this holder's last write (app/db.py Replica)."""
        return self.db.read_as(req.context.identity, function, *args)


@falcon.before(bearer)
class MyRiskItems(HolderResource):
    async def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        send_raw(resp, await self.read(req, "postsales.my_risk_items"))


@falcon.before(bearer)
class HolderRiskItem(HolderResource):
    async def on_get(self, req: falcon.Request, resp: falcon.Response, riskItemId: str) -> None:
        send_raw(resp, await self.read(req, "postsales.risk_item", *path_item(riskItemId, "riskItemId")))

    async def on_patch(self, req: falcon.Request, resp: falcon.Response, riskItemId: str) -> None:
        item = path_item(riskItemId, "riskItemId")
        send_raw(resp, await self.call(req, "postsales.update_risk_item", *item, await self.body(req)))


@falcon.before(bearer)
class Beneficiaries(HolderResource):
    async def on_get(self, req: falcon.Request, resp: falcon.Response, riskItemId: str) -> None:
        send_raw(resp, await self.read(req, "postsales.risk_item_beneficiaries",
                                       *path_item(riskItemId, "riskItemId")))

    async def on_post(self, req: falcon.Request, resp: falcon.Response, riskItemId: str) -> None:
        item = path_item(riskItemId, "riskItemId")
        send_raw(resp, await self.call(req, "postsales.add_beneficiary", *item, await self.body(req)),
                 status=201)


@falcon.before(bearer)
class HolderBeneficiary(HolderResource):
    async def on_patch(self, req: falcon.Request, resp: falcon.Response, riskItemId: str,
                       beneficiaryId: str) -> None:
        ids = *path_item(riskItemId, "riskItemId"), path_id(beneficiaryId, "beneficiaryId")
        send_raw(resp, await self.call(req, "postsales.update_beneficiary", *ids, await self.body(req)))

    async def on_delete(self, req: falcon.Request, resp: falcon.Response, riskItemId: str,
                        beneficiaryId: str) -> None:
        ids = *path_item(riskItemId, "riskItemId"), path_id(beneficiaryId, "beneficiaryId")
        send_raw(resp, await self.call(req, "postsales.remove_beneficiary", *ids))


@falcon.before(bearer)
class Variants(HolderResource):
    async def on_get(self, req: falcon.Request, resp: falcon.Response, riskItemId: str) -> None:
        send_raw(resp, await self.read(req, "postsales.risk_item_variants", *path_item(riskItemId, "riskItemId")))
