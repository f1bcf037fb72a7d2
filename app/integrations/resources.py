"""POST /api/integrations/{dispatch,dispatch-v2,retry}: parse, claim, run, answer.

POST /api/integrations/dispatch-batch carries many of the first three at once (the worker).
Every answer is `{"success": true, "data": {emissionId, status, externalId, error, ...}}` with
200, whatever the emission's outcome (FAILED and ABANDONED are outcomes the database recorded
and will retry or report; the caller, usually the outbox worker, must not retry them itself),
and 409 EMISSION_IN_PROGRESS while another call holds the key (the worker retries that later).
"""
from __future__ import annotations

from typing import Any

import falcon

from app.auth import bearer
from app.errors import ApiError, bad_request, emission_answer
from app.orchestrator.pipeline import SALES_DISPATCH
from app.responses import send
from app.validation import id_and_uid, invalid, json_object
from app.validation import positive_id as _id


class _Service:
    """A route of the service role (the worker, the retry queue); each subclass is wrapped in
    the `bearer` hook with the service-role tokens."""

    def __init__(self, services) -> None:
        self.pipeline = services.pipeline
        self.credential = services.service_tokens
        self.max_body = services.config.max_body_bytes

    async def body(self, req: falcon.Request) -> dict[str, Any]:
        """The JSON object of the body (MAX_BODY_BYTES), read after the hook checked the token."""
        return await json_object(req, self.max_body)


def dispatch_spec(body: dict[str, Any]) -> dict[str, Any]:
    """/dispatch: the risk item record of the insert trigger ({"record": {...}} or the record),
    named by its `id` or its `uid` (both: they must name the same item)."""
    record = body.get("record", body)
    if not isinstance(record, dict):
        raise bad_request("record must be an object", details={"field": "record"})
    item_id, item_uid = id_and_uid(record.get("id"), record.get("uid"), "record.id", "record.uid")
    if item_id is None and item_uid is None:
        raise invalid("record.id", "is required (or record.uid)")
    return {"riskItemId": item_id, "riskItemUid": item_uid and str(item_uid), "provider": None,
            "event": SALES_DISPATCH}


def dispatch_v2_spec(body: dict[str, Any]) -> dict[str, Any]:
    """/dispatch-v2: initial mode {"order_id": n} (the order trigger), retry mode {"emission_id": n}."""
    if ("order_id" in body) == ("emission_id" in body):
        raise bad_request("give exactly one of order_id (initial) and emission_id (retry)")
    if "order_id" in body:
        return {"orderId": _id(body["order_id"], "order_id")}
    return {"emissionId": _id(body["emission_id"], "emission_id")}


def retry_spec(body: dict[str, Any]) -> dict[str, Any]:
    """/retry: the delayed retry of a FAILED emission, {"emissionId": n}."""
    return {"emissionId": _id(body.get("emissionId", body.get("emission_id")), "emissionId")}


SPECS = {
    "/api/integrations/dispatch": dispatch_spec,
    "/api/integrations/dispatch-v2": dispatch_v2_spec,
    "/api/integrations/retry": retry_spec,
}
MAX_BATCH = 500


@falcon.before(bearer)
class SingleEmission(_Service):
    """/dispatch, /dispatch-v2 and /retry: one emission."""

    def __init__(self, services, path: str) -> None:
        super().__init__(services)
        self.spec = SPECS[path]

    async def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        [data] = await self.pipeline.run_specs([self.spec(await self.body(req))])
        send(resp, emission_answer(data))


@falcon.before(bearer)
class DispatchBatch(_Service):
    """Many outbox deliveries in one request (the worker's batches):
    {"requests": [{"id": outbox id, "path": "/api/integrations/dispatch", "body": {...}}, ...]}
    -> {"results": [{"id", "status": the HTTP status the single route would answer, "data" | "error"}]}"""

    async def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = await self.body(req)
        requests = body.get("requests")
        if not isinstance(requests, list) or not 0 < len(requests) <= MAX_BATCH:
            raise bad_request(f"requests must be a list of 1 to {MAX_BATCH} deliveries", details={"field": "requests"})
        results: list[dict[str, Any]] = []
        specs: list[dict[str, Any]] = []
        for one in requests:
            result: dict[str, Any] = {"id": one.get("id") if isinstance(one, dict) else None}
            try:
                path = one.get("path") if isinstance(one, dict) else None
                if not isinstance(path, str) or path not in SPECS or not isinstance(one.get("body"), dict):
                    raise bad_request(f"each request needs a path among {sorted(SPECS)} and an object body")
                specs.append(SPECS[one["path"]](one["body"]))
            except ApiError as exc:
                result.update(status=exc.status_code, error={"code": exc.code, "message": exc.message})
            results.append(result)
        answers = iter(await self.pipeline.run_specs(specs) if specs else [])
        for result in results:
            if "status" in result:
                continue
            try:
                result.update(status=200, data=emission_answer(next(answers)))
            except ApiError as exc:  # what the single route would answer, as this row's outcome
                result.update(status=exc.status_code, error={"code": exc.code, "message": exc.message},
                              **({"data": exc.details} if exc.details is not None else {}))
        send(resp, {"results": results})
