"""A connection the server ends while it idles in the pool: 503 DATABASE_UNAVAILABLE, never 500.

What the failover drill (tests/system/test_failover.py) hit about once in four runs: a primary's
postmaster dies, and each backend idle in the app's pool notices it and sends the client a FATAL
("terminating connection due to unexpected postmaster exit", as pg_terminate_backend sends
"... administrator command") before it exits. asyncpg takes that unasked message on an idle
connection as a protocol error and stops the connection's next operation with
InternalClientError ("cannot switch to state 12; another operation (2) is in progress"). The
socket's close follows a moment later; a request given the connection in between answered 500.

Here without a formation: a relay between the app and PostgreSQL passes the backend's last
message on at once and holds back its hang-up, so the next request meets that window each time.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from typing import Self
from urllib.parse import urlsplit

import falcon.testing
import pytest

from app.app import create_app
from app.config import Config
from app.db import SERVICE, Database
from app.outbox.queue import DATABASE_ERRORS
from tests.conftest import child_environ, unique
from tests.test_db import OTP_REQUEST, _with_hosts, assert_unavailable


class HeldHangUp:
    """A TCP relay to PostgreSQL: the server's bytes pass at once, its close only on `release()`."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.backend_ports: list[int] = []   # the relay's own ports towards PostgreSQL
        self.server_hung_up = asyncio.Event()
        self._released = asyncio.Event()
        self._writers: list[asyncio.StreamWriter] = []
        self._relays: set[asyncio.Task] = set()

    async def __aenter__(self) -> Self:
        self._listener = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.listen_port = self._listener.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc) -> None:
        self.release()
        self._listener.close()
        for writer in self._writers:
            writer.close()
        if self._relays:
            await asyncio.wait(self._relays, timeout=5)

    def release(self) -> None:
        self._released.set()

    async def _relay(self, app_reader, app_writer) -> None:
        self._relays.add(asyncio.current_task())
        pg_reader, pg_writer = await asyncio.open_connection(self.host, self.port)
        self._writers += [app_writer, pg_writer]
        self.backend_ports.append(pg_writer.get_extra_info("sockname")[1])

        async def pipe(reader, writer, from_server: bool) -> None:
            try:
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
                if from_server:
                    self.server_hung_up.set()
                    await self._released.wait()
            except OSError:
                pass
            finally:
                writer.close()

        await asyncio.gather(pipe(app_reader, pg_writer, False), pipe(pg_reader, app_writer, True))


@contextlib.asynccontextmanager
async def relayed() -> AsyncIterator[tuple[HeldHangUp, str]]:
    """A HeldHangUp in front of the test database, and DATABASE_URL through it."""
    real = urlsplit(os.environ["DATABASE_URL"])
    async with HeldHangUp(real.hostname, real.port or 5432) as relay:
        yield relay, _with_hosts(os.environ["DATABASE_URL"], f"127.0.0.1:{relay.listen_port}")


async def end_the_session(admin, relay: HeldHangUp) -> None:
    """pg_terminate_backend of the one session through `relay`, idle in a pool: its FATAL reaches
    the app's connection, the close is held back."""
    ended = admin.execute("SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity "
                          "WHERE client_port = ANY(%s)", (relay.backend_ports,)).fetchall()
    assert [r["ended"] for r in ended] == [True], "the app's one connection"
    await relay.server_hung_up.wait()
    await asyncio.sleep(0.05)  # read by the idle connection (the app's event loop)


@pytest.mark.parametrize("after", [
    # The same call again: its statement is prepared on the connection (Bind/Execute).
    pytest.param(lambda client: client.simulate_post(OTP_REQUEST, json={"email": f"{unique('otp')}@example.com"}),
                 id="prepared statement"),
    # Another call: its statement is prepared first (Parse/Describe).
    pytest.param(lambda client: client.simulate_get("/api/gateway/v1/auth/authorize",
                                                    headers={"x-api-key": "ik_" + unique("unknown")}),
                 id="statement to prepare"),
])
async def test_a_pooled_connection_whose_server_ended_it_is_503_database_unavailable(admin, after):
    async with relayed() as (relay, url):
        # One pooled connection: the request after the termination is given that one.
        config = Config.from_env(child_environ(DATABASE_URL=url, DB_POOL_MIN="1", DB_POOL_MAX="1"))
        async with falcon.testing.ASGIConductor(create_app(config)) as client, asyncio.timeout(20):
            first = await client.simulate_post(OTP_REQUEST, json={"email": f"{unique('otp')}@example.com"})
            assert first.status_code == 200, first.text
            await end_the_session(admin, relay)

            assert_unavailable(await after(client))

            relay.release()  # the close arrives: the pool connects anew and the next call answers
            again = await client.simulate_post(OTP_REQUEST, json={"email": f"{unique('otp')}@example.com"})
            assert again.status_code == 200, again.text


async def test_the_worker_takes_it_as_a_database_away_and_goes_on(admin):
    """The worker's claim loop tries again on DATABASE_ERRORS (app/outbox/queue.py); anything
    else ends the worker, as it did in a drill run with the InternalClientError."""
    async with relayed() as (relay, url):
        db = Database(url, min_size=1, max_size=1)
        await db.open()
        try:
            async with asyncio.timeout(20):
                await db.call(SERVICE, None, "insurance.read_metrics")
                await end_the_session(admin, relay)
                with pytest.raises(DATABASE_ERRORS):
                    await db.call(SERVICE, None, "insurance.read_metrics")
        finally:
            relay.release()
            await db.close()
