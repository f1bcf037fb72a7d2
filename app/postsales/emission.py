"""POST /api/integrations/post-sales: the holder's post-sales emission (the holder web app,
with the post-sales JWT; docs/api.md).

Body: the StandardRiskItem of the specification. Its `uid` names the item (the integer `id`
is an alternative); the item itself is read again from the database as the holder, under the
claimant RLS policies (postsales.begin_emission), never taken from the body. The answer is the
emission's outcome: SUCCESS, FAILED, ABANDONED, or skipped when the package has no post-sales
provider; 409 EMISSION_IN_PROGRESS while another call holds the key.
"""
from __future__ import annotations

import uuid
from typing import Any

import falcon

from app.auth import bearer
from app.errors import emission_answer
from app.responses import send
from app.validation import id_and_uid, invalid, json_object

PATH = "/api/integrations/post-sales"


def item_reference(body: dict[str, Any]) -> tuple[int | None, uuid.UUID | None]:
    """(id, uid) of the StandardRiskItem in the body; at least one, each well formed."""
    raw_id, raw_uid = body.get("id"), body.get("uid")
    item_id, item_uid = id_and_uid(raw_id, raw_uid, "id", "uid")
    if item_id is None and item_uid is None:
        raise invalid("uid", "is required (or the item's id)")
    return item_id, item_uid


@falcon.before(bearer)
class PostSalesEmission:
    def __init__(self, services) -> None:
        self.db = services.db
        self.credential = services.postsales_tokens
        self.pipeline = services.pipeline
        self.max_body = services.config.max_body_bytes

    async def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        item_id, item_uid = item_reference(await json_object(req, self.max_body))
        begun = await self.pipeline.begin("postsales.begin_emission", item_id, item_uid,
                                          identity=req.context.identity)
        send(resp, holder_view(emission_answer(await self.pipeline.run_claimed(begun))))


def holder_view(data: dict) -> dict:
    """A holder sees a failure's code and a generic message, never the provider's own text
    (operators read it in error_history)."""
    error = data.get("error")
    if error:
        data = {**data, "error": {"code": error.get("code"), "message": (
            "The insurer could not take the request yet; it will be retried." if data.get("status") == "FAILED"
            else "The insurer did not take the request.")}}
    return data
