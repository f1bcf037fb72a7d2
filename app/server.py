"""The HTTP server layer under the app: uvicorn's httptools protocol with bounds on what a client
may send before the app sees a request (docs/security.md "Request limits").

httptools puts no limit on a request's head: a 48 MiB header was answered 200 and stayed in the
process's memory, and a head trickled one line a second kept its connection forever. Here, per
connection:

- the request target (the URL of the request line) is at most MAX_URL_BYTES: 414;
- the header lines together are at most MAX_HEADER_BYTES: 431;
- the head (request line and headers) is complete within HEADERS_TIMEOUT seconds of the
  connection or of its first byte, else the connection is closed (408 when nothing is in flight).

A refused request is answered and its connection closed: nothing of it stays. At most one read
of the socket (256 KiB) beyond the limits is ever held, because httptools keeps a header being
received inside the parser, where only the size of what was fed can be counted.

An answer leaves in one write: uvicorn writes a response's head and its body separately (two
send(2) calls, two TCP segments, two wake-ups of the client); here the head waits for the
body's first write (`OneWrite`), at most until the loop's next turn.

The common request costs two attribute writes and a comparison: a head that fits in the read
that began it is measured only when that read was larger than the limits, and no timer is armed
for it. `make bench-postsales` and `make bench-gateway` run the app on this protocol.
"""
from __future__ import annotations

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from app.config import Config

MAX_URL_BYTES = 8 * 1024
MAX_HEADER_BYTES = 16 * 1024
# Each header line as sent: name, ": ", value, CRLF.
_LINE_OVERHEAD = 4
# A head that fits in one read of at most this size cannot be over either limit.
_SMALL_HEAD = MAX_HEADER_BYTES


class OneWrite:
    """The transport as a response cycle sees it: the cycle's first write (the head) is held and
    goes out with the next one (the body), or on the loop's next turn, or before the response is
    complete or the connection closed, whichever comes first: the bytes and their order are
    uvicorn's. One per connection; `expect_head()` when a request's cycle starts."""

    __slots__ = ("_expect_head", "_head", "loop", "transport")

    def __init__(self, transport, loop) -> None:
        self.transport = transport
        self.loop = loop
        self._head: bytes | None = None
        self._expect_head = False

    def expect_head(self) -> None:
        self._expect_head = True

    def write(self, data: bytes) -> None:
        if self._expect_head:
            self._expect_head = False
            self._head = data
            self.loop.call_soon(self.flush)  # a body that is not sent at once does not hold it back
        elif self._head is not None:
            head, self._head = self._head, None
            self.transport.write(head + data)
        else:
            self.transport.write(data)

    def flush(self) -> None:
        if self._head is not None:
            head, self._head = self._head, None
            if not self.transport.is_closing():
                self.transport.write(head)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def __getattr__(self, name: str):  # is_closing, get_extra_info, ...
        return getattr(self.transport, name)


class _Refused(Exception):
    """Raised inside a parser callback to stop parsing: the request is refused."""


def headers_timeout() -> float:
    """HEADERS_TIMEOUT of this process, read by the configuration as every setting is (its one
    declaration in app/config.py: the same default, the same checks): uvicorn makes this
    protocol in each worker process and hands it no configuration of ours."""
    return Config.from_env().headers_timeout


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's HttpToolsProtocol with the limits above (`serve` names it as uvicorn's `http`)."""

    headers_timeout: float | None = None  # read once per process, at the first connection

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        cls = type(self)
        if cls.headers_timeout is None:
            cls.headers_timeout = headers_timeout()
        self._in_head = False      # between a request's first byte and the end of its headers
        self._began_here = False   # the current head began in the read being parsed
        self._head_fed = 0         # bytes of reads fed wholly inside the current head
        self._read_size = 0        # size of the read being parsed
        self._refusal: tuple[int, str] | None = None
        # A connection that says nothing is closed like one that says too little.
        self._head_timer = self.loop.call_later(cls.headers_timeout, self._head_timed_out)
        self._one_write = OneWrite(transport, self.loop)

    def connection_lost(self, exc) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._unset_keepalive_if_required()
        self._read_size = len(data)
        self._began_here = False
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        except httptools.HttpParserError:
            if self._refusal is not None:
                self._refuse(*self._refusal)
            else:
                msg = "Invalid HTTP request received."
                self.logger.warning(msg)
                self.send_400_response(msg)
            return
        if self._in_head:  # the head goes on in a later read
            if not self._began_here:
                self._head_fed += len(data)
            if len(self.url) > MAX_URL_BYTES:
                self._refuse(414, "Request-URI too long.")
            elif self._head_fed > MAX_URL_BYTES + MAX_HEADER_BYTES:
                self._refuse(431, "Request header fields too large.")
            elif self._head_timer is None:
                self._head_timer = self.loop.call_later(self.headers_timeout, self._head_timed_out)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._began_here = True
        self._head_fed = 0

    def on_headers_complete(self) -> None:
        self._in_head = False
        if self._head_timer is not None:
            self._cancel_head_timer()
        if self._head_fed or self._read_size > _SMALL_HEAD:  # it may be over: measure it
            if len(self.url) > MAX_URL_BYTES:
                self._refusal = (414, "Request-URI too long.")
                raise _Refused
            if sum(len(n) + len(v) + _LINE_OVERHEAD for n, v in self.headers) > MAX_HEADER_BYTES:
                self._refusal = (431, "Request header fields too large.")
                raise _Refused
        super().on_headers_complete()

    def _start_asgi_task(self, cycle, app) -> None:  # a request's turn (pipelined ones wait for it)
        cycle.transport = self._one_write
        self._one_write.expect_head()
        super()._start_asgi_task(cycle, app)

    def on_response_complete(self) -> None:
        self._one_write.flush()  # a HEAD answer has no body write: its head goes now
        super().on_response_complete()

    def on_url(self, url: bytes) -> None:
        self.url += url
        if len(self.url) > MAX_URL_BYTES:
            self._refusal = (414, "Request-URI too long.")
            raise _Refused

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        self._refuse(408, "Request headers not received in time.")

    def _refuse(self, status: int, message: str) -> None:
        """Answer `status` with a one-line text body and close the connection (only close it
        while the answer to an earlier pipelined request is still being written)."""
        self._cancel_head_timer()
        self._in_head = False
        self._one_write.flush()
        if self.cycle is not None and not self.cycle.response_complete:
            self.transport.close()
            return
        body = message.encode("ascii")
        content = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            content.extend([name, b": ", value, b"\r\n"])
        content.extend([b"content-type: text/plain; charset=utf-8\r\n",
                        b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
                        b"connection: close\r\n\r\n", body])
        self.transport.write(b"".join(content))
        self.transport.close()
