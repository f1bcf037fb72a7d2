"""An answer leaves the server in one write (app/server.py OneWrite): uvicorn writes a response's
head and body separately, two send(2) calls and two TCP segments for every answer. The protocol
runs here on a recording transport, so each write the client would receive is seen."""
from __future__ import annotations

import asyncio

from uvicorn.config import Config
from uvicorn.server import ServerState

from app.server import BoundedHttpToolsProtocol


class Recording(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data) -> None:
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name, default=None):
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(name, default)

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...


async def answers(app, raw: bytes, turns: int = 20) -> list[bytes]:
    """The writes of the server's answers to `raw` (one or more requests on one connection)."""
    config = Config(app, http=BoundedHttpToolsProtocol, lifespan="off", log_level="warning")
    config.load()
    protocol = BoundedHttpToolsProtocol(config=config, server_state=ServerState(), app_state={})
    transport = Recording()
    protocol.connection_made(transport)
    protocol.data_received(raw)
    for _ in range(turns):
        await asyncio.sleep(0)
    await asyncio.sleep(0.05)
    protocol.connection_lost(None)
    return transport.writes


async def hello(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"5")]})
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else b"hello"})


async def streamed(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await asyncio.sleep(0.01)  # the head must not wait for this
    await send({"type": "http.response.body", "body": b"later", "more_body": True})
    await send({"type": "http.response.body", "body": b""})


def test_an_answer_is_one_write():
    writes = asyncio.run(answers(hello, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
    assert len(writes) == 1, writes
    assert writes[0].startswith(b"HTTP/1.1 200 OK\r\n") and writes[0].endswith(b"\r\n\r\nhello")


def test_pipelined_answers_are_one_write_each_in_order():
    writes = asyncio.run(answers(hello, b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\nHEAD /2 HTTP/1.1\r\nHost: x\r\n\r\n"
                                        b"GET /3 HTTP/1.1\r\nHost: x\r\n\r\n"))
    assert len(writes) == 3, writes
    assert writes[0].endswith(b"hello") and writes[2].endswith(b"hello")
    assert writes[1].startswith(b"HTTP/1.1 200 OK\r\n") and writes[1].endswith(b"\r\n\r\n")  # HEAD: no body


def test_a_head_does_not_wait_for_a_late_body():
    async def run():
        return await answers(streamed, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", turns=3)
    writes = asyncio.run(run())
    assert writes[0].startswith(b"HTTP/1.1 200 OK\r\n") and writes[0].endswith(b"\r\n\r\n")
    assert b"".join(writes[1:]) == b"5\r\nlater\r\n0\r\n\r\n"
