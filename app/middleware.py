"""Middleware shared by every surface: request ids, metrics and the access log; the pool's lifespan."""
from __future__ import annotations

import asyncio
import datetime
import re
import sys
import time
import uuid

import falcon

from app.db import Database
from app.metrics import UNMATCHED, RequestMetrics, surface_of

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_UTC = datetime.UTC


class AccessLog:
    """One JSON line per request on stdout, in the shape of the structlog lines. Cheap, as it
    runs for every request: the line is one f-string (every value in it is ours or already
    checked: a route template, a request id of [A-Za-z0-9._-], an HTTP method httptools
    accepted), the timestamp's seconds are formatted once a second, and the line goes to the
    stream's buffer, flushed at most every `flush_seconds` (structlog's PrintLogger flushes,
    a system call, on every line)."""

    def __init__(self, stream=None, flush_seconds: float = 0.5) -> None:
        self.stream = stream or sys.stdout.buffer
        self.flush_seconds = flush_seconds
        self._flush_due = False
        self._second = -1
        self._stamp = ""

    def write(self, request_id: str, surface: str, route: str, method: str, status: int, seconds: float) -> None:
        now = time.time()
        second = int(now)
        if second != self._second:
            self._second = second
            self._stamp = datetime.datetime.fromtimestamp(second, _UTC).strftime("%Y-%m-%dT%H:%M:%S")
        self.stream.write(
            f'{{"event":"request","level":"info","requestId":"{request_id}","surface":"{surface}",'
            f'"route":"{route}","method":"{method}","status":{status},"ms":{seconds * 1000:.2f},'
            f'"timestamp":"{self._stamp}.{int((now - second) * 1e6):06d}Z"}}\n'.encode())  # as structlog's
        if not self._flush_due:
            self._flush_due = True
            asyncio.get_running_loop().call_later(self.flush_seconds, self.flush)

    def flush(self) -> None:
        self._flush_due = False
        try:
            self.stream.flush()
        except (OSError, ValueError):
            pass  # stdout closed: nothing left to tell


class Observe:
    """Every answer carries `X-Request-Id` (the caller's, when sane, or a new one); every
    request is counted and timed by route template (app/metrics.py) and, with an access log,
    written as one JSON line: request id, route template, method, status, duration, surface."""

    def __init__(self, metrics: RequestMetrics | None = None, access_log: AccessLog | None = None) -> None:
        self.metrics = metrics
        self.access_log = access_log
        self._surfaces: dict[str, str] = {}

    async def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.started = time.perf_counter()
        given = req.get_header("X-Request-Id")
        req.context.request_id = given if given and _REQUEST_ID.match(given) else uuid.uuid4().hex

    async def process_response(self, req: falcon.Request, resp: falcon.Response,
                               resource: object, req_succeeded: bool) -> None:
        request_id = getattr(req.context, "request_id", None)
        if request_id is None:
            return  # not through process_request (the lifespan's events)
        resp.set_header("X-Request-Id", request_id)
        seconds = time.perf_counter() - req.context.started
        route = req.uri_template or UNMATCHED
        surface = self._surfaces.get(route)
        if surface is None:
            surface = self._surfaces[route] = surface_of(route)
        status = resp.status_code
        if self.metrics is not None:
            self.metrics.observe(surface, route, req.method, status, seconds)
        if self.access_log is not None:
            self.access_log.write(request_id, surface, route, req.method, status, seconds)


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
