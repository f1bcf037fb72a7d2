"""A dashboard query costs one database round trip: the session is resolved inside the
procedure's own statement (dashboard.session_claims_or_deny), not by a lookup before it."""
from __future__ import annotations

import contextlib
import json
from urllib.parse import quote

from tests.dashboard.test_emissions import query


class _Counting:
    """The real pool, with the statements sent through its connections written down."""

    def __init__(self, pool) -> None:
        self._pool = pool
        self.statements: list[str] = []

    async def acquire(self, *args, **kwargs):
        return _CountingConnection(await self._pool.acquire(*args, **kwargs), self.statements)

    async def release(self, conn, *args, **kwargs):
        return await self._pool.release(conn.real, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._pool, name)


class _CountingConnection:
    def __init__(self, real, statements: list[str]) -> None:
        self.real = real
        self.statements = statements

    async def fetchval(self, sql, *args, **kwargs):
        self.statements.append(sql)
        return await self.real.fetchval(sql, *args, **kwargs)

    async def fetchrow(self, sql, *args, **kwargs):
        self.statements.append(sql)
        return await self.real.fetchrow(sql, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.real, name)


@contextlib.contextmanager
def counting(services):
    pool = services.db.pool
    services.db.pool = counted = _Counting(pool)
    try:
        yield counted
    finally:
        services.db.pool = pool


async def test_by_risk_item_is_one_round_trip(client, services, session, make_risk_item, make_emission):
    item = make_risk_item()
    make_emission(item["id"])
    with counting(services) as pool:
        resp = await query(client, session, "byRiskItem", {"riskItemId": item["id"]})
    assert resp.status_code == 200, resp.text
    assert resp.json["result"]["data"]["riskItem"]["id"] == item["id"]
    assert len(pool.statements) == 1
    assert "dashboard.session_claims_or_deny" in pool.statements[0]


async def test_a_revoked_session_is_refused_by_the_same_statement(client, services, session, admin):
    admin.execute("UPDATE insurance.dashboard_sessions SET revoked_at = now() WHERE user_id = %s", (session["id"],))
    with counting(services) as pool:
        resp = await query(client, session, "list")
    assert resp.status_code == 401
    assert resp.json["error"]["data"]["code"] == "UNAUTHORIZED"
    assert resp.json["error"]["message"] == "A valid dashboard session is required"
    assert len(pool.statements) == 1


async def test_without_a_cookie_no_statement_is_sent(client, services):
    with counting(services) as pool:
        resp = await client.simulate_get("/api/trpc/integrationEmissions.list")
    assert resp.status_code == 401 and pool.statements == []


# -- batches: bounded, and one session lookup for all their calls (issue 19) -------------

LIST = "integrationEmissions.list"


def batch_url(calls: int) -> tuple[str, str]:
    inputs = {str(i): {"limit": 1} for i in range(calls)}
    return f"/api/trpc/{','.join([LIST] * calls)}", f"batch=1&input={quote(json.dumps(inputs), safe='')}"


async def test_a_batch_over_trpc_max_batch_is_one_error_and_no_statement(client, services, session):
    limit = services.config.trpc_max_batch
    assert limit == 10, "the default"
    path, qs = batch_url(limit + 1)
    with counting(services) as pool:
        resp = await client.simulate_get(path, query_string=qs, headers=session["headers"])
    assert resp.status_code == 400, resp.text
    assert isinstance(resp.json, dict), "one error for the whole request, not one per call"
    assert resp.json["error"]["data"]["code"] == "BAD_REQUEST"
    assert "TRPC_MAX_BATCH" in resp.json["error"]["message"]
    assert pool.statements == []
    path, qs = batch_url(limit)
    resp = await client.simulate_get(path, query_string=qs, headers=session["headers"])
    assert resp.status_code == 200 and len(resp.json) == limit


async def test_a_batch_with_an_unknown_session_costs_one_lookup(client, services):
    path, qs = batch_url(10)
    with counting(services) as pool:
        resp = await client.simulate_get(path, query_string=qs, headers={"Cookie": "dashboard_session=made-up"})
    assert resp.status_code == 401
    assert [item["error"]["data"]["code"] for item in resp.json] == ["UNAUTHORIZED"] * 10
    assert len(pool.statements) == 1, pool.statements


async def test_a_batch_resolves_its_session_once(client, services, session):
    path, qs = batch_url(5)
    with counting(services) as pool:
        resp = await client.simulate_get(path, query_string=qs, headers=session["headers"])
    assert resp.status_code == 200 and len(resp.json) == 5
    assert all("result" in item for item in resp.json)
    session_lookups = [s for s in pool.statements if "session_claims" in s]
    assert len(session_lookups) == 1, pool.statements
    assert len(pool.statements) == 5, "no statement more than the calls themselves"


async def test_a_batch_whose_first_call_fails_before_sql_still_resolves_once(client, services, session):
    inputs = {"0": {"limit": "not a number"}, **{str(i): {"limit": 1} for i in range(1, 4)}}
    path = f"/api/trpc/{','.join([LIST] * 4)}"
    qs = f"batch=1&input={quote(json.dumps(inputs), safe='')}"
    with counting(services) as pool:
        resp = await client.simulate_get(path, query_string=qs, headers=session["headers"])
    assert resp.status_code == 207
    assert resp.json[0]["error"]["data"]["code"] == "BAD_REQUEST"
    assert all("result" in item for item in resp.json[1:])
    assert len([s for s in pool.statements if "session_claims" in s]) == 1, pool.statements
