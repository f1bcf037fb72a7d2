"""GET /healthz (the process answers), GET /readyz (database reachable, migrations current) and
GET /metrics (Prometheus)."""
from __future__ import annotations

import collections
from collections.abc import Callable
from pathlib import Path

import falcon
import orjson
import structlog

from app.addresses import ClientAddresses
from app.db import SERVICE, Database
from app.errors import ApiError
from app.metrics import CONTENT_TYPE, address_allowed, exposition

log = structlog.get_logger("app.health")


def planned_changes(plan: Path) -> list[str]:
    """Change names of a sqitch plan, in order (tags and pragmas skipped)."""
    names = []
    for line in plan.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("%", "#", "@")):
            names.append(line.split()[0])
    return names


def from_operators(addresses: ClientAddresses, networks) -> Callable[[falcon.Request], bool]:
    """Whether a request's client (behind a trusted proxy: the client, not the proxy) lies in
    METRICS_ALLOWED_IPS: who may read /metrics and the internal API reference."""
    def allowed(req: falcon.Request) -> bool:
        client = addresses.of(req)
        return address_allowed(str(client) if client else None, networks)
    return allowed


class Health:
    async def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.data = b'{"status":"ok"}'
        resp.content_type = falcon.MEDIA_JSON


class Ready:
    """GET /readyz: 200 ready, or 503 (database unreachable, migrations pending). The pending
    changes are named only to METRICS_ALLOWED_IPS (`shown`); anyone else sees how many, not
    which: a change's name tells what the deployment lacks."""

    def __init__(self, db: Database, plan: Path, shown: Callable[[falcon.Request], bool] | None = None) -> None:
        self.db = db
        self.planned = planned_changes(plan)
        self.shown = shown

    async def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        try:
            deployed = collections.Counter(await self.db.ping())
        except Exception as exc:  # noqa: BLE001 - any failure to reach the database means "not ready"
            log.warning("readyz_database_unreachable", error=type(exc).__name__)
            resp.status = falcon.HTTP_503
            resp.data = orjson.dumps({"status": "unavailable", "database": "unreachable"})
            resp.content_type = falcon.MEDIA_JSON
            return
        # A reworked change repeats its name in the plan, and sqitch records each deploy of it:
        # the app is ready when every instance is deployed, not only the one it reworks.
        planned = collections.Counter()
        missing = []
        for name in self.planned:
            planned[name] += 1
            if planned[name] > deployed[name]:
                missing.append(name)
        resp.status = falcon.HTTP_503 if missing else falcon.HTTP_200
        answer = {"status": "unavailable" if missing else "ready", "database": "ok"}
        if self.shown is None or self.shown(req):
            answer["pendingMigrations"] = missing
        else:
            answer["pendingMigrationCount"] = len(missing)
        resp.data = orjson.dumps(answer)
        resp.content_type = falcon.MEDIA_JSON


class Metrics:
    """GET /metrics: Prometheus' text format, only to METRICS_ALLOWED_IPS (403 otherwise).
    The database's gauges come from one call, insurance.read_metrics(); when it fails the
    scrape still answers, with insurance_database_up 0."""

    def __init__(self, db: Database, networks, request_metrics=None, addresses: ClientAddresses | None = None) -> None:
        self.db = db
        self.request_metrics = request_metrics  # flushed first: this process's figures are current
        self.allowed = from_operators(addresses or ClientAddresses(()), networks)

    async def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        if not self.allowed(req):
            raise ApiError(403, "FORBIDDEN", "metrics are served only to METRICS_ALLOWED_IPS")
        try:
            data = orjson.loads(await self.db.call(SERVICE, None, "insurance.read_metrics"))
        except Exception as exc:  # noqa: BLE001 - the process's own figures still matter when the database is away
            log.warning("metrics_database_unreadable", error=type(exc).__name__)
            data = None
        if self.request_metrics is not None:
            self.request_metrics.flush()
        resp.data = exposition(data)
        resp.content_type = CONTENT_TYPE
