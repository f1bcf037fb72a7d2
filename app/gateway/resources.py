"""Protected gateway resources: the validator of every branch and the risk items of v1, v2.

Each responder parses its input, makes ONE call of a `gateway.*` SQL function as the
channel (RLS decides what the channel sees) and passes the JSON through. That call also
checks that the channel is still active and counts the rate limit (see `answer`).
"""
from __future__ import annotations

import base64
import binascii
import time
from typing import Any

import falcon
import orjson

from app import db
from app.auth import bearer
from app.errors import ApiError, bad_request, rate_limited
from app.gateway.auth import BranchGuard
from app.responses import send_raw
from app.validation import integer, item_ref, json_object, text_param

MAX_WINDOW = 100
DEFAULT_WINDOW = 50
MAX_OFFSET = 2**31 - 2  # the SQL window takes integer offsets


class Channel:
    """What a protected resource needs: the branch guard, the database, the rate limit."""

    def __init__(self, guard: BranchGuard, database: db.Database, rate_limit: int, max_body: int) -> None:
        self.guard = guard
        self.db = database
        self.rate_limit = rate_limit
        self.max_body = max_body

    def call(self, req: falcon.Request, function: str, *args: Any):
        """`function(rate_limit, *args)` as the channel the `bearer` hook verified."""
        return self.db.call_as(req.context.identity, function, self.rate_limit, *args)

    def read(self, req: falcon.Request, function: str, *args: Any):
        """`call` of a function that only reads, on the standby of READ_DATABASE_URL when there is
        one. Not with RATE_LIMIT_PER_MINUTE: then every call counts the channel's minute, a
        write, and all go to the primary."""
        if self.rate_limit:
            return self.call(req, function, *args)
        return self.db.read_as(req.context.identity, function, self.rate_limit, *args)


class _Protected:
    """A route of one branch: the `bearer` hook verifies that branch's tokens."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.credential = channel.guard.tokens


def answer(resp: falcon.Response, reply, status: int = 200, data: bytes | str | None = None) -> None:
    """Sends a gateway.reply: its data (or `data`), with the X-RateLimit-* headers when the
    limit is on, or 429 with Retry-After when the call was over it (nothing was done)."""
    if reply["rate_limit"] is not None:
        headers = {"X-RateLimit-Limit": str(reply["rate_limit"]),
                   "X-RateLimit-Remaining": str(max(reply["rate_remaining"], 0)),
                   "X-RateLimit-Reset": str(reply["rate_reset"])}
        if reply["rate_remaining"] < 0:
            raise rate_limited("RATE_LIMITED", "rate limit exceeded", reply["rate_reset"] - int(time.time()),
                               reply["rate_limit"], reply["rate_reset"])
        resp.set_headers(headers)
    send_raw(resp, reply["data"] if data is None else data, status)


@falcon.before(bearer)
class Validator(_Protected):
    """GET /{branch}/auth/validator: the decoded context of a valid token."""

    async def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        reply = await self.channel.call(req, "gateway.token_channel")
        claims = req.context.identity.claims
        registered = ("iss", "aud", "sub", "iat", "exp", "jti", "branch", "gen", "channel")
        context = {"branch": claims["branch"], "channel": orjson.loads(reply["data"]) if reply["data"] else None,
                   "headers": self.channel.guard.headers(claims), "expires_at": claims["exp"],
                   "payload": {k: v for k, v in claims.items() if k not in registered}}
        answer(resp, reply, data=orjson.dumps(context))


# ---------------------------------------------------------------- query and body parsing

def _policy_param(req: falcon.Request) -> str | None:
    return text_param(req, "policyId", 100)


def parse_window(req: falcon.Request) -> tuple[int, int]:
    """from (default 0) .. to (default from + 49), inclusive, at most 100 items."""
    start = integer(req.get_param("from"), "from")
    start = 0 if start is None else start
    end = integer(req.get_param("to"), "to")
    end = start + DEFAULT_WINDOW - 1 if end is None else end
    if start < 0 or end < start or end - start + 1 > MAX_WINDOW or end > MAX_OFFSET:
        raise bad_request(f"the window needs 0 <= from <= to and at most {MAX_WINDOW} items",
                          "INVALID_WINDOW", {"from": start, "to": end, "max": MAX_WINDOW})
    return start, end


def decode_cursor(cursor: str) -> int:
    """The id after which a v2 page starts; the cursor is gateway.page_risk_items' `nextCursor`."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 8:
        raise bad_request("cursor is not one this API returned", "INVALID_CURSOR")
    return int.from_bytes(raw, "big", signed=True)


def parse_page(req: falcon.Request) -> tuple[int, int | None] | None:
    """A v2 keyset page, (limit, the id its cursor names or None), or None when the request
    asks for a from/to window instead; both at once is INVALID_PAGINATION."""
    if not (req.has_param("limit") or req.has_param("cursor")):
        return None
    if req.has_param("from") or req.has_param("to"):
        raise bad_request("use either from/to or limit/cursor", "INVALID_PAGINATION")
    limit = integer(req.get_param("limit"), "limit")
    limit = DEFAULT_WINDOW if limit is None else limit
    if not 1 <= limit <= MAX_WINDOW:
        raise bad_request(f"limit must be from 1 to {MAX_WINDOW}", "INVALID_PAGINATION",
                          {"limit": limit, "max": MAX_WINDOW})
    cursor = req.get_param("cursor")
    return limit, (decode_cursor(cursor) if cursor is not None else None)


# ---------------------------------------------------------------- risk items

@falcon.before(bearer)
class RiskItems(_Protected):
    """GET and POST /{v1,v2}/risk-items."""

    def __init__(self, channel: Channel, keyset: bool = False) -> None:
        super().__init__(channel)
        self.keyset = keyset  # v2: `limit` + `cursor` besides the from/to window

    async def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        policy = _policy_param(req)
        page = parse_page(req) if self.keyset else None
        if page:
            limit, after = page
            reply = await self.channel.read(req, "gateway.page_risk_items", limit, after, policy)
        else:
            start, end = parse_window(req)
            reply = await self.channel.read(req, "gateway.list_risk_items", start, end, policy)
        answer(resp, reply)

    async def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        # The field rules are the tables'; gateway.create_risk_item reports them per field.
        body = await json_object(req, self.channel.max_body)
        reply = await self.channel.call(req, "gateway.create_risk_item", orjson.dumps(body).decode())
        answer(resp, reply, status=201)


@falcon.before(bearer)
class RiskItem(_Protected):
    """GET /{v1,v2}/risk-items/{uid}: the item by its uid or by the integer id its create
    answer carries."""

    async def on_get(self, req: falcon.Request, resp: falcon.Response, uid: str) -> None:
        try:  # anything that names no item is the same 404 as an item of another channel
            item_id, item_uid = item_ref(uid, "uid")
        except ApiError:
            raise ApiError(404, "RISK_ITEM_NOT_FOUND", "risk item not found") from None
        answer(resp, await self.channel.read(req, "gateway.get_risk_item", item_id, item_uid))

