"""The partner's view of its webhooks: GET /integrations/{v1,v2}/webhook-deliveries and
POST .../webhook-deliveries/{id}/redeliver.

Like the risk items: one gateway.* SQL call as the channel (its deliveries only, newest first),
the window of the branch (v1 from/to; v2 also limit/cursor), the rate limit counted by it.
"""
from __future__ import annotations

import falcon

from app.auth import bearer
from app.errors import bad_request
from app.gateway.resources import DEFAULT_WINDOW, MAX_WINDOW, _Protected, answer, decode_cursor, parse_window
from app.validation import integer, path_id

WEBHOOK_BRANCHES = {"integrations/v1": False, "integrations/v2": True}  # branch -> keyset pagination


@falcon.before(bearer)
class WebhookDeliveries(_Protected):
    """GET /integrations/{v1,v2}/webhook-deliveries."""

    def __init__(self, channel, keyset: bool = False) -> None:
        super().__init__(channel)
        self.keyset = keyset

    async def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        if self.keyset and (req.has_param("limit") or req.has_param("cursor")):
            if req.has_param("from") or req.has_param("to"):
                raise bad_request("use either from/to or limit/cursor", "INVALID_PAGINATION")
            limit = integer(req.get_param("limit"), "limit")
            limit = DEFAULT_WINDOW if limit is None else limit
            if not 1 <= limit <= MAX_WINDOW:
                raise bad_request(f"limit must be from 1 to {MAX_WINDOW}", "INVALID_PAGINATION",
                                  {"limit": limit, "max": MAX_WINDOW})
            cursor = req.get_param("cursor")
            before = decode_cursor(cursor) if cursor is not None else None
            reply = await self.channel.call(req, "gateway.page_webhook_deliveries", limit, before)
        else:
            start, end = parse_window(req)
            reply = await self.channel.call(req, "gateway.list_webhook_deliveries", start, end)
        answer(resp, reply)


@falcon.before(bearer)
class Redeliver(_Protected):
    """POST /integrations/{v1,v2}/webhook-deliveries/{id}/redeliver: the event again, same webhook-id."""

    async def on_post(self, req: falcon.Request, resp: falcon.Response, id: str) -> None:
        delivery = path_id(id, "id")
        answer(resp, await self.channel.call(req, "gateway.redeliver_webhook", delivery), status=202)
