"""POST /api/integrations/{dispatch,dispatch-v2,retry,post-sales}: parse, claim, run, answer.

Every answer is `{"success": true, "data": {emissionId, status, externalId, error, ...}}` with
200, whatever the emission's outcome (FAILED and ABANDONED are outcomes the database recorded
and will retry or report; the caller, usually the outbox worker, must not retry them itself),
and 409 EMISSION_IN_PROGRESS while another call holds the key (the worker retries that later).
"""
from __future__ import annotations

from typing import Any

import falcon

from app.db import HOLDER
from app.errors import ApiError, bad_request
from app.integrations import service
from app.responses import send


async def _body(req: falcon.Request) -> dict[str, Any]:
    try:
        body = await req.get_media()
    except falcon.MediaMalformedError:
        raise bad_request("the body is not valid JSON", "MALFORMED_JSON") from None
    except falcon.MediaNotFoundError:
        body = None
    if not isinstance(body, dict):
        raise bad_request("the body must be a JSON object")
    return body


def _id(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**63:
        raise bad_request(f"{name} must be a positive integer", details={"field": name})
    return value


def _send(resp: falcon.Response, data: dict[str, Any]) -> None:
    if data["status"] == "IN_PROGRESS":
        raise ApiError(409, "EMISSION_IN_PROGRESS", "another call is emitting this item",
                       details=data, headers={"Retry-After": "5"})
    send(resp, data)


class _Service:
    """A route of the service role (the worker, the retry queue)."""

    def __init__(self, services) -> None:
        self.services = services

    def authorize(self, req: falcon.Request) -> None:
        self.services.service_tokens.verify_header(req.get_header("Authorization"))


class Dispatch(_Service):
    """The risk item record of the insert trigger: {"record": {...}} (or the record itself)."""

    async def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.authorize(req)
        body = await _body(req)
        record = body.get("record", body)
        if not isinstance(record, dict):
            raise bad_request("record must be an object", details={"field": "record"})
        begun = await service.begin(self.services, "integrations.begin_emission",
                                    _id(record.get("id"), "record.id"), None, service.SALES_DISPATCH)
        _send(resp, await service.run_claimed(self.services, begun))


class DispatchV2(_Service):
    """Initial mode {"order_id": n} (the order insert trigger), retry mode {"emission_id": n}."""

    async def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.authorize(req)
        body = await _body(req)
        if ("order_id" in body) == ("emission_id" in body):
            raise bad_request("give exactly one of order_id (initial) and emission_id (retry)")
        if "order_id" in body:
            begun = await service.begin(self.services, "integrations.begin_order_emission",
                                        _id(body["order_id"], "order_id"))
        else:
            begun = await service.begin(self.services, "integrations.begin_emission_retry",
                                        _id(body["emission_id"], "emission_id"))
        _send(resp, await service.run_claimed(self.services, begun))


class Retry(_Service):
    """The delayed retry of a FAILED emission: {"emissionId": n}."""

    async def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.authorize(req)
        body = await _body(req)
        emission_id = _id(body.get("emissionId", body.get("emission_id")), "emissionId")
        begun = await service.begin(self.services, "integrations.begin_emission_retry", emission_id)
        _send(resp, await service.run_claimed(self.services, begun))


class PostSales:
    """A holder's post-sales emission; body: the StandardRiskItem (its `id` names the item;
    the item itself is read from the database, never taken from the body)."""

    def __init__(self, services) -> None:
        self.services = services

    async def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        token = self.services.postsales_tokens.verify_header(req.get_header("Authorization"))
        body = await _body(req)
        begun = await service.begin(self.services, "integrations.begin_post_sales_emission",
                                    _id(body.get("id"), "id"), role=HOLDER, claims=token.claims_json)
        _send(resp, await service.run_claimed(self.services, begun))
