"""Bounded requests before the app (app/server.py), against a real `serve` over real sockets:
request line at most 8 KiB (414), headers at most 16 KiB (431), the head complete within
HEADERS_TIMEOUT or the connection is closed, and a refused request leaves no memory behind."""
from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from tests.conftest import child_environ, free_port, running

HEADERS_TIMEOUT = 2


@pytest.fixture(scope="module")
def api():
    port = free_port()
    env = child_environ(PORT=str(port), HEADERS_TIMEOUT=str(HEADERS_TIMEOUT), LOG_LEVEL="warning")
    with running(["serve", "--port", str(port)], env, f"http://127.0.0.1:{port}/healthz") as proc:
        yield port, proc


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=15)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def send_all(sock: socket.socket, data: bytes) -> None:
    """Send what the server takes; it may close the connection before the end (a refusal)."""
    try:
        sock.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


def read_answer(sock: socket.socket) -> bytes:
    """Everything until the server closes the connection (or a complete small answer)."""
    chunks = []
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            data = b"".join(chunks)
            head, sep, body = data.partition(b"\r\n\r\n")
            if sep and b"content-length:" in head.lower():
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                if len(body) >= length and b"connection: close" not in head.lower():
                    break
    except ConnectionResetError:
        pass
    return b"".join(chunks)


def status_of(answer: bytes) -> int:
    assert answer.startswith(b"HTTP/1.1 "), answer[:200]
    return int(answer.split(b" ", 2)[1])


def request(path: str = "/healthz", headers: dict[str, str] | None = None) -> bytes:
    lines = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1"] + [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_a_request_within_the_limits_is_answered(api):
    port, _ = api
    with connect(port) as sock:
        # Just under both limits: a long URL and 15 KiB of headers.
        sock.sendall(request("/healthz?" + "a" * 8000, {f"X-Fill-{i}": "v" * 1000 for i in range(15)}))
        assert status_of(read_answer(sock)) == 200


def test_a_request_line_over_8_kib_is_414(api):
    port, _ = api
    with connect(port) as sock:
        send_all(sock, request("/healthz?" + "a" * 9000))
        answer = read_answer(sock)
    assert status_of(answer) == 414 and b"connection: close" in answer.lower()


def test_a_request_line_over_8_kib_sent_in_pieces_is_414(api):
    port, _ = api
    with connect(port) as sock:
        send_all(sock, b"GET /healthz?")
        for _ in range(10):
            send_all(sock, b"a" * 1000)
            time.sleep(0.01)
        answer = read_answer(sock)
    assert status_of(answer) == 414


@pytest.mark.parametrize("headers", [
    {"X-Big": "v" * (1024 * 1024)},                         # one 1 MiB header
    {f"X-Fill-{i}": "v" * 1000 for i in range(20)},       # 20 KiB of small ones
], ids=["one-1MiB-header", "many-small-headers"])
def test_headers_over_16_kib_are_431(api, headers):
    port, _ = api
    with connect(port) as sock:
        send_all(sock, request("/healthz", headers))
        answer = read_answer(sock)
    assert status_of(answer) == 431 and b"connection: close" in answer.lower()


def test_a_refused_header_leaves_no_memory_behind(api):
    """On main a 48 MiB header was answered 200 and left the API about 41 MB larger."""
    port, proc = api
    before = rss_mb(proc.pid)
    for _ in range(3):
        with connect(port) as sock:
            send_all(sock, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"v" * (48 * 1024 * 1024) + b"\r\n\r\n")
            answer = read_answer(sock)
        assert answer == b"" or status_of(answer) == 431
    assert rss_mb(proc.pid) - before < 8, f"RSS grew from {before:.0f} MB to {rss_mb(proc.pid):.0f} MB"
    with connect(port) as sock:  # and the server still answers
        sock.sendall(request())
        assert status_of(read_answer(sock)) == 200


def test_headers_trickled_one_line_a_second_are_cut_off(api):
    """Slowloris: on main a connection sending one header line a second was never closed."""
    port, _ = api
    with connect(port) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        started = time.monotonic()
        closed_after = None
        for i in range(4 * HEADERS_TIMEOUT):
            time.sleep(0.5)
            try:
                sock.sendall(f"X-Slow-{i}: 1\r\n".encode())
            except (BrokenPipeError, ConnectionResetError):
                closed_after = time.monotonic() - started
                break
        answer = read_answer(sock)
        closed_after = closed_after or time.monotonic() - started
    assert answer == b"" or status_of(answer) == 408
    assert closed_after < HEADERS_TIMEOUT + 2.5, f"still open after {closed_after:.1f} s"


def test_a_connection_that_says_nothing_is_closed(api):
    port, _ = api
    with connect(port) as sock:
        started = time.monotonic()
        answer = read_answer(sock)
    assert time.monotonic() - started < HEADERS_TIMEOUT + 2.5
    assert answer == b"" or status_of(answer) == 408


def test_keep_alive_and_a_large_body_still_work(api):
    """The limits count the head only: a body in the same read and a second request on the
    same connection are answered as before."""
    port, _ = api
    body = b"x" * (200 * 1024)
    post = (b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\n\r\n" + body)
    with connect(port) as sock:
        sock.sendall(post + request())
        data = b""
        deadline = time.monotonic() + 10
        while data.count(b"HTTP/1.1 ") < 2 and time.monotonic() < deadline:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    statuses = [int(part.split(b" ", 1)[0]) for part in data.split(b"HTTP/1.1 ")[1:]]
    assert len(statuses) == 2 and statuses[1] == 200 and statuses[0] != 431, data[:300]
