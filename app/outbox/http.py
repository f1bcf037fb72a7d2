"""The worker's HTTP: aiohttp alone. httpx (the API's client, app/orchestrator) costs a
webhook about 450 µs more CPU than aiohttp's bare POST, and httpx and aiohttp together
overran the worker's 48 MB (docs/performance.md "The worker on aiohttp alone").
tests/test_worker_imports.py fails if the worker ever loads httpx.

aiohttp is imported by `session` alone, never when this module is: the API imports
app/webhooks.py (its endpoint rules) and sends no webhook.
"""
from __future__ import annotations

import functools
import os
import ssl
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import aiohttp


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The trust the API's httpx gives: SSL_CERT_FILE or SSL_CERT_DIR when set, else certifi's
    bundle. One for the process: each holds its own copy of the certificates (about 1 MB)."""
    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    import certifi
    return ssl.create_default_context(cafile=certifi.where())


def session(max_connections: int, tls: ssl.SSLContext, *, trust_env: bool, connect_timeout: float | None = None,
            read_timeout: float | None = None, raw: bool = False) -> aiohttp.ClientSession:
    """A pool of at most `max_connections` connections, kept alive; no cookies kept. Nothing is
    redirected unless a request says so (aiohttp follows by default: every call here passes
    allow_redirects=False). `raw`: answers read as they come (no Accept-Encoding asked, none
    decoded), as a partner's excerpt is kept. The deliverers' total deadlines bound each call."""
    import aiohttp
    connector = aiohttp.TCPConnector(limit=max_connections, ssl=tls)
    return aiohttp.ClientSession(
        connector=connector, cookie_jar=aiohttp.DummyCookieJar(), trust_env=trust_env,
        timeout=aiohttp.ClientTimeout(sock_connect=connect_timeout, sock_read=read_timeout),
        auto_decompress=not raw, skip_auto_headers=("Accept-Encoding",) if raw else ())


def failure_name(exc: BaseException) -> str | None:
    """What went wrong on the wire, in the names the outbox's errors and partners' delivery logs
    have always used (httpx's); None for an exception that is not aiohttp's."""
    import aiohttp
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return "ConnectTimeout"
    if isinstance(exc, aiohttp.ServerTimeoutError):
        return "ReadTimeout"
    if isinstance(exc, aiohttp.ClientConnectorError):  # refused, DNS, TLS handshake or certificate
        return "ConnectError"
    if isinstance(exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError, aiohttp.ClientResponseError)):
        return "RemoteProtocolError"
    if isinstance(exc, aiohttp.ClientOSError):
        return "ReadError"
    if isinstance(exc, aiohttp.InvalidURL):
        return "InvalidURL"
    if isinstance(exc, aiohttp.ClientError):
        return type(exc).__name__
    return None
