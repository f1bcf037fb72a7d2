"""The yardstick: a bare Falcon + asyncpg endpoint running one indexed SELECT.

Same stack as the real app (Falcon ASGI, uvicorn with uvloop and httptools, an asyncpg pool,
orjson), none of its work: no token, no role switch, no envelope.

    BARE_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/insurance_bench \
      uvicorn bench.bare_app:app --loop uvloop --http httptools
"""
from __future__ import annotations

import os

import asyncpg
import falcon
import falcon.asgi
import orjson

SELECT = "SELECT id, uid::text, policy_uid, status, variant FROM insurance.risk_items WHERE id = $1"


class Lifespan:
    def __init__(self) -> None:
        self.pool: asyncpg.Pool | None = None

    async def process_startup(self, scope, event) -> None:
        self.pool = await asyncpg.create_pool(os.environ["BARE_DATABASE_URL"], min_size=2, max_size=10)

    async def process_shutdown(self, scope, event) -> None:
        await self.pool.close()


class RiskItem:
    def __init__(self, lifespan: Lifespan) -> None:
        self.lifespan = lifespan

    async def on_get(self, req: falcon.Request, resp: falcon.Response, item_id: int) -> None:
        row = await self.lifespan.pool.fetchrow(SELECT, item_id)
        if row is None:
            raise falcon.HTTPNotFound()
        resp.data = orjson.dumps(dict(row))
        resp.content_type = falcon.MEDIA_JSON


class Health:
    async def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.data = b'{"status":"ok"}'


def create_app() -> falcon.asgi.App:
    lifespan = Lifespan()
    app = falcon.asgi.App(middleware=[lifespan])
    app.add_route("/healthz", Health())
    app.add_route("/bare/risk-items/{item_id:int}", RiskItem(lifespan))
    return app


app = create_app()
