"""The partner's view of its webhooks: GET /integrations/{v1,v2}/webhook-deliveries and
POST .../webhook-deliveries/{id}/redeliver.

Like the risk items: one gateway.* SQL call as the channel (its deliveries only, newest first),
the window of the branch (v1 from/to; v2 also limit/cursor), the rate limit counted by it.
"""
from __future__ import annotations

import falcon

from app.auth import bearer
from app.gateway.resources import _Protected, answer, parse_page, parse_window
from app.validation import path_id

WEBHOOK_BRANCHES = {"integrations/v1": False, "integrations/v2": True}  # branch -> keyset pagination


@falcon.before(bearer)
class WebhookDeliveries(_Protected):
    """GET /integrations/{v1,v2}/webhook-deliveries."""

    def __init__(self, channel, keyset: bool = False) -> None:
        super().__init__(channel)
        self.keyset = keyset

    async def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        page = parse_page(req) if self.keyset else None
        if page:
            limit, before = page
            reply = await self.channel.call(req, "gateway.page_webhook_deliveries", limit, before)
        else:
            start, end = parse_window(req)
            reply = await self.channel.call(req, "gateway.list_webhook_deliveries", start, end)
        answer(resp, reply)


@falcon.before(bearer)
class Redeliver(_Protected):
    """POST /integrations/{v1,v2}/webhook-deliveries/{id}/redeliver: the event again, same webhook-id,
    at most WEBHOOK_REDELIVERIES_PER_MINUTE a channel (counted and audited by the SQL function;
    beyond it the reply carries that limit, refused, and `answer` makes it a 429)."""

    def __init__(self, channel, per_minute: int) -> None:
        super().__init__(channel)
        self.per_minute = per_minute

    async def on_post(self, req: falcon.Request, resp: falcon.Response, id: str) -> None:
        delivery = path_id(id, "id")
        answer(resp, await self.channel.call(req, "gateway.redeliver_webhook", delivery, self.per_minute), status=202)
