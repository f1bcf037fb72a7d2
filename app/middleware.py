"""Middleware shared by every surface: request ids and the database pool's lifespan."""
from __future__ import annotations

import ipaddress
import re
import uuid

import falcon

from app.db import Database

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def client_ip(req: falcon.Request) -> str | None:
    """The client's IP as uvicorn saw it (X-Forwarded-For only from FORWARDED_ALLOW_IPS), or None
    when the peer is no IP address (a unix socket): the per-IP limits key on it."""
    try:
        return str(ipaddress.ip_address(req.remote_addr))
    except (TypeError, ValueError):
        return None


class RequestId:
    """Every answer carries `X-Request-Id`: the caller's, when sane, or a new one."""

    async def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        given = req.get_header("X-Request-Id")
        req.context.request_id = given if given and _REQUEST_ID.match(given) else uuid.uuid4().hex

    async def process_response(self, req: falcon.Request, resp: falcon.Response,
                               resource: object, req_succeeded: bool) -> None:
        request_id = getattr(req.context, "request_id", None)
        if request_id:
            resp.set_header("X-Request-Id", request_id)


class Lifespan:
    """Opens the pool at start-up and closes it at shutdown (plus anything else registered)."""

    def __init__(self, db: Database, on_startup=(), on_shutdown=()) -> None:
        self.db = db
        self.on_startup = list(on_startup)
        self.on_shutdown = list(on_shutdown)

    async def process_startup(self, scope: dict, event: dict) -> None:
        await self.db.open()
        for hook in self.on_startup:
            await hook()

    async def process_shutdown(self, scope: dict, event: dict) -> None:
        for hook in self.on_shutdown:
            await hook()
        await self.db.close()
