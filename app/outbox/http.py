"""The worker's HTTP: aiohttp alone. httpx (the API's client, app/orchestrator) cost a
webhook about 450 µs more of the worker's CPU than aiohttp's POST, and httpx and aiohttp
together overran the worker's 48 MB (docs/performance-notebook.md "The worker on aiohttp alone").
tests/outbox/test_worker.py::test_the_worker_process_never_loads_httpx fails if it ever loads httpx.

Only the worker's wing imports this module: the API, which sends no webhook, never loads it
(app/webhooks.py, the endpoint rules it uses, imports no HTTP client).
"""
from __future__ import annotations

import ssl

import aiohttp


def session(max_connections: int, *, tls: ssl.SSLContext | bool = True, connect_timeout: float | None = None,
            read_timeout: float | None = None, raw: bool = False) -> aiohttp.ClientSession:
    """A pool of at most `max_connections` connections, kept alive; no cookies kept, no proxy
    from the environment (aiohttp would look one up, and read ~/.netrc, in a thread at each
    call). Nothing is redirected unless a request says so (aiohttp follows by default: every
    call here passes allow_redirects=False). `raw`: answers read as they come (no
    Accept-Encoding asked, none decoded), as a partner's excerpt is kept. The deliverers' total
    deadlines bound each call.

    `tls` True is aiohttp's one verifying context of the process, made when it is imported: the
    system's certificates, or SSL_CERT_FILE / SSL_CERT_DIR. A context of our own (certifi's, as
    httpx's) would hold a second copy of them: about 1 MB of a worker's 48."""
    connector = aiohttp.TCPConnector(limit=max_connections, ssl=tls)
    return aiohttp.ClientSession(
        connector=connector, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False,
        timeout=aiohttp.ClientTimeout(sock_connect=connect_timeout, sock_read=read_timeout),
        auto_decompress=not raw, skip_auto_headers=("Accept-Encoding",) if raw else ())


def failure_name(exc: BaseException) -> str | None:
    """What went wrong on the wire, in the names the outbox's errors and partners' delivery logs
    have always used (httpx's); None for an exception that is not aiohttp's."""
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
