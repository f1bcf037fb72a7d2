"""The tRPC v11 HTTP protocol, as `@trpc/client` speaks it (read from @trpc/server's resolveResponse).

    GET  /api/trpc/a.b?input=<json>                  a query
    POST /api/trpc/a.b          body <json> or none  a mutation
    GET  /api/trpc/a.b,a.c?batch=1&input={"0":..,"1":..}   a batch (POST for mutations)

Answers: {"result":{"data":...}} or {"error":{"message","code":<JSON-RPC number>,"data":{"code",
"httpStatus","path"}}}; a batch answers an array (HTTP 207 when the statuses differ). With
`trpc-accept: application/jsonl` (httpBatchStreamLink) a batch answers JSON lines: here one head
line in which every call is already resolved, `{"0":[[item]],"1":[[item]]}`.

superjson: a client with `transformer: superjson` sends every input as {"json": ..., "meta": ...}
and reads every answer's data and error through superjson.deserialize, which needs {"json": ...}.
A request whose inputs all have that form is answered in it (the stream head as a whole, as the
real server serializes each chunk). Inputs of our procedures never have a top-level "json" key.
"""
from __future__ import annotations

from typing import Any

import orjson

# tRPC's error keys -> JSON-RPC 2.0 codes (TRPC_ERROR_CODES_BY_KEY) and HTTP statuses.
CODES = {
    "PARSE_ERROR": (-32700, 400),
    "BAD_REQUEST": (-32600, 400),
    "UNAUTHORIZED": (-32001, 401),
    "PAYMENT_REQUIRED": (-32002, 402),
    "FORBIDDEN": (-32003, 403),
    "NOT_FOUND": (-32004, 404),
    "METHOD_NOT_SUPPORTED": (-32005, 405),
    "TIMEOUT": (-32008, 408),
    "CONFLICT": (-32009, 409),
    "PRECONDITION_FAILED": (-32012, 412),
    "PAYLOAD_TOO_LARGE": (-32013, 413),
    "UNSUPPORTED_MEDIA_TYPE": (-32015, 415),
    "UNPROCESSABLE_CONTENT": (-32022, 422),
    "PRECONDITION_REQUIRED": (-32028, 428),
    "TOO_MANY_REQUESTS": (-32029, 429),
    "CLIENT_CLOSED_REQUEST": (-32099, 499),
    "INTERNAL_SERVER_ERROR": (-32603, 500),
    "NOT_IMPLEMENTED": (-32603, 501),
    "BAD_GATEWAY": (-32603, 502),
    "SERVICE_UNAVAILABLE": (-32603, 503),
    "GATEWAY_TIMEOUT": (-32603, 504),
}
# HTTP status -> error key (HTTP_CODE_TO_JSONRPC2): where two keys share a status, the general one.
KEY_BY_STATUS = {status: key for key, (_, status) in CODES.items() if key != "PARSE_ERROR"}

MISSING = object()  # no input at all (distinct from an input of null)


class TrpcError(Exception):
    """An error answered in tRPC's envelope; `extra` adds fields to `error.data`."""

    def __init__(self, code: str, message: str, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code if code in CODES else "INTERNAL_SERVER_ERROR"
        self.message = message
        self.extra = extra or {}

    @property
    def status(self) -> int:
        return CODES[self.code][1]

    @classmethod
    def from_status(cls, status: int, message: str) -> TrpcError:
        return cls(KEY_BY_STATUS.get(status, "INTERNAL_SERVER_ERROR"), message)

    def shape(self, path: str | None) -> dict[str, Any]:
        number, status = CODES[self.code]
        data: dict[str, Any] = {"code": self.code, "httpStatus": status, **self.extra}
        if path is not None:
            data["path"] = path
        return {"message": self.message, "code": number, "data": data}


def is_superjson(value: Any) -> bool:
    return isinstance(value, dict) and "json" in value and value.keys() <= {"json", "meta"}


def from_superjson(value: dict) -> Any:
    """The input a superjson client meant. A root annotation of "undefined" means no input;
    nested annotations (Date, BigInt...) are left as their JSON form (ISO strings, digits)."""
    meta = value.get("meta")
    if isinstance(meta, dict) and meta.get("values") == ["undefined"]:
        return MISSING
    return value["json"]


def result_item(data: Any, superjson: bool) -> dict:
    return {"result": {"data": {"json": data} if superjson else data}}


def error_item(error: TrpcError, path: str | None, superjson: bool) -> dict:
    shape = error.shape(path)
    return {"error": {"json": shape} if superjson else shape}


def batch_status(items: list[dict]) -> int:
    """One status when every item agrees, else 207 (getHTTPStatusCode)."""
    statuses = {item_status(item) for item in items}
    return statuses.pop() if len(statuses) == 1 else 207


def item_status(item: dict) -> int:
    if "error" not in item:
        return 200
    error = item["error"]
    return error.get("json", error)["data"]["httpStatus"]


def dumps(value: Any) -> bytes:
    return orjson.dumps(value)


def stream_head(items: list[dict], superjson: bool) -> bytes:
    """The one line of a JSONL batch answer: every call resolved in the head. The producer
    encodes a value without promises as [[value]]; superjson serializes the line as a whole."""
    head = {str(index): [[item]] for index, item in enumerate(items)}
    return dumps({"json": head} if superjson else head) + b"\n"
