"""The worker's webhook deliverer: one outbox row to a partner's endpoint (Standard Webhooks).

The rules it applies (the secrets' derivation, the signature, the endpoint and address rules,
the backoff) live in app/webhooks.py, which the API and the command line use too; this module
holds what needs the network: `WebhookSender.deliver` sends one outbox row: webhook-id (the
row's, stable across retries), webhook-timestamp (this attempt's), webhook-signature
(`v1,<base64>`, two of them during WEBHOOK_SECRET_OVERLAP after a rotation); a total deadline
(WEBHOOK_TIMEOUT); no redirect followed; at most 64 KiB of the answer read, and only a short
cleaned excerpt kept. A 2xx is delivered; anything else is retried by the outbox with the
rules' backoff (WEBHOOK_RETRY_BASE_SECONDS, WEBHOOK_RETRY_CAP_SECONDS). Each endpoint (its URL)
has at most WEBHOOK_ENDPOINT_CONCURRENCY deliveries in flight; rows beyond it wait their turn
in this worker while the wait, judged from the endpoint's recent answers, stays short (a third
of the lease), and are otherwise handed back to the queue for about that wait, their attempt
uncounted. Waiting rows hold none of the worker's slots (`waiting`), so one slow partner holds
a few slots, never all of them, and never the queue's head.
"""
from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any, Self
from urllib.parse import urlsplit

import aiohttp
import orjson

from app import webhooks as rules
from app.outbox.http import failure_name, session
from app.webhooks import CHANNEL_HEADER, MAX_ANSWER_BYTES, MAX_DEFER_SECONDS, WEBHOOK_ID, EndpointError, Resolver

Secrets = Callable[[str], Awaitable[list[str]]]  # channel id -> its secrets, newest first


class EndpointClients:
    """The webhooks' HTTP clients (aiohttp sessions, app/outbox/http.py): one connection pool per
    endpoint (its URL) of at most `per_endpoint` connections, all kept alive, and one TLS context
    for all of them. One pool for every partner made a webhook cost more the more partners there
    were (httpx's pool closed an idle connection whenever it held more than it kept alive). No
    cookies kept, nothing followed (redirects) or trusted from the environment (proxies);
    `timeout` bounds a connection's opening, the WebhookSender's deadline the whole call. `tls`: the
    process's verifying context (app/outbox/http.session), unless one is given."""

    def __init__(self, per_endpoint: int, timeout: float, tls: ssl.SSLContext | bool = True) -> None:
        self.per_endpoint = max(1, per_endpoint)
        self.timeout = timeout
        self._tls = tls
        self._clients: dict[str, Any] = {}

    def __call__(self, url: str) -> Any:
        """The aiohttp session of the endpoint `url` (made on its first delivery)."""
        client = self._clients.get(url)
        if client is None:
            client = self._clients[url] = session(self.per_endpoint, tls=self._tls, connect_timeout=self.timeout,
                                                  raw=True)
        return client

    async def release(self, url: str) -> None:
        """Closes the connections of an endpoint that no delivery uses."""
        client = self._clients.pop(url, None)
        if client is not None:
            await client.close()

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class _Endpoint:
    """One endpoint's share of a worker: its slots, who waits for one or holds one, how long a
    delivery takes (a moving average of its recent ones)."""

    def __init__(self, slots: int) -> None:
        self.slots = asyncio.Semaphore(slots)
        self.waiting = 0
        self.sending = 0
        self.seconds = 0.1


# Endpoints whose pools a worker keeps while no delivery uses them (an endpoint past them
# closes its connections when its last delivery ends).
MAX_IDLE_ENDPOINTS = 256


class WebhookSender:
    """Sends webhook rows of the outbox; `deliver(row)` returns the row's outbox result.
    `clients(url)` is the endpoint's HTTP client (EndpointClients)."""

    def __init__(self, clients: Callable[[str], Any], secrets_of: Secrets, *, public_only: bool,
                 timeout: float = 10.0, retry_base: float = 10.0, retry_cap: float = 3600.0,
                 per_endpoint: int = 4, on_result: Callable[[str], None] | None = None,
                 max_wait: float = 20.0, max_waiting: int = 1024, resolver: Resolver | None = None) -> None:
        self.clients = clients
        self.resolver = resolver
        self.secrets_of = secrets_of
        self.public_only = public_only
        self.timeout = timeout
        self.retry_base = retry_base
        self.retry_cap = retry_cap
        self.per_endpoint = max(1, per_endpoint)
        self.on_result = on_result or (lambda result: None)
        self.max_wait = max_wait
        self.max_waiting = max_waiting
        self.endpoints: dict[str, _Endpoint] = {}
        self.waiting = 0  # rows of every endpoint waiting for their turn here

    @staticmethod
    def is_webhook(row: dict[str, Any]) -> bool:
        return CHANNEL_HEADER in (row.get("headers") or {})

    def _failed(self, row: dict[str, Any], status: int | None, error: str, result: str) -> dict[str, Any]:
        self.on_result(result)
        return {"id": row["id"], "status": status, "error": error[:500], "retry": True,
                "retryIn": round(rules.backoff(row.get("attempts") or 1, self.retry_base, self.retry_cap), 3)}

    async def deliver(self, row: dict[str, Any]) -> dict[str, Any]:
        headers = dict(row.get("headers") or {})
        channel = str(headers.pop(CHANNEL_HEADER))
        try:
            scheme, host, port = rules.parse_url(row["url"], self.public_only)
        except EndpointError as exc:
            return self._failed(row, None, f"{exc.code}: {exc}", "refused")
        # An endpoint is a URL: partners behind one host never queue behind each other.
        endpoint = self.endpoints.get(row["url"])
        if endpoint is None:
            endpoint = self.endpoints[row["url"]] = _Endpoint(self.per_endpoint)
        if endpoint.slots.locked():
            wait = (endpoint.waiting + 1) / self.per_endpoint * endpoint.seconds
            if wait > self.max_wait or self.waiting >= self.max_waiting:
                # Not an attempt: back to the queue for about the time its turn would take.
                return {"id": row["id"], "status": None, "error": None,
                        "defer": round(min(MAX_DEFER_SECONDS, max(1.0, wait)), 3)}
        endpoint.waiting += 1
        self.waiting += 1
        try:
            await endpoint.slots.acquire()
        finally:
            endpoint.waiting -= 1
            self.waiting -= 1
        started = time.monotonic()
        endpoint.sending += 1
        try:
            outcome = await self._send(row, headers, channel, scheme, host, port)
            # The endpoint's answer time (the back-office's health chart of the webhooks).
            outcome["ms"] = round((time.monotonic() - started) * 1000)
            return outcome
        finally:
            endpoint.sending -= 1
            endpoint.slots.release()
            endpoint.seconds = 0.8 * endpoint.seconds + 0.2 * (time.monotonic() - started)
            if not endpoint.sending and not endpoint.waiting and len(self.endpoints) > MAX_IDLE_ENDPOINTS:
                self.endpoints.pop(row["url"], None)
                release = getattr(self.clients, "release", None)
                if release is not None:
                    await release(row["url"])

    async def _send(self, row: dict[str, Any], headers: dict[str, Any], channel: str,
                    scheme: str, host: str, port: int) -> dict[str, Any]:
        msg_id = str(headers.get(WEBHOOK_ID) or f"msg_outbox_{row['id']}")
        body = orjson.dumps(row.get("body")).decode()
        try:
            async with asyncio.timeout(self.timeout):  # the whole call: resolve, connect, send, read
                url, server_hostname, host_header = row["url"], None, None
                if self.public_only:
                    # Checked again now (DNS may have changed since the save), and the connection
                    # goes to the address checked, so a second lookup cannot point elsewhere.
                    address = (await rules.check_address(host, self.resolver))[0]
                    parts = urlsplit(url)
                    literal = f"[{address}]" if ":" in address else address
                    url = parts._replace(netloc=f"{literal}:{port}").geturl()
                    host_header = parts.netloc.rsplit("@", 1)[-1]
                    server_hostname = host  # TLS: the name's SNI, its certificate checked against the name
                secrets_ = await self.secrets_of(channel)
                if not secrets_:
                    return self._failed(row, None, "WEBHOOK_NO_SECRET: the channel has no webhook secret", "refused")
                timestamp = int(time.time())
                send = {str(k): str(v) for k, v in headers.items()}
                send.update({"Content-Type": "application/json", "User-Agent": "insurance-webhooks/1",
                             WEBHOOK_ID: msg_id, "webhook-timestamp": str(timestamp),
                             "webhook-signature": rules.sign(secrets_, msg_id, timestamp, body)})
                if host_header:
                    send["Host"] = host_header
                async with self.clients(row["url"]).post(url, data=body.encode(), headers=send, allow_redirects=False,
                                                         server_hostname=server_hostname) as response:
                    read = b""
                    while len(read) < MAX_ANSWER_BYTES:  # the rest is never read (the connection is closed)
                        chunk = await response.content.read(MAX_ANSWER_BYTES - len(read))
                        if not chunk:
                            break
                        read += chunk
        except EndpointError as exc:
            return self._failed(row, None, f"{exc.code}: {exc}", "refused")
        except TimeoutError:
            return self._failed(row, None, f"WEBHOOK_TIMEOUT: no answer within {self.timeout:g} s", "timeout")
        except aiohttp.ClientError as exc:
            return self._failed(row, None, f"WEBHOOK_UNREACHABLE: {failure_name(exc)}", "unreachable")
        status = response.status
        if 200 <= status < 300:
            self.on_result("delivered")
            return {"id": row["id"], "status": status, "error": None}
        if 300 <= status < 400:
            return self._failed(row, status, f"WEBHOOK_REDIRECT: redirects are not followed "
                                             f"({rules.excerpt(response.headers.get('location', '').encode())})", "failed")
        return self._failed(row, status, f"WEBHOOK_HTTP_{status}: {rules.excerpt(read)}", "failed")


class SecretCache:
    """A channel's current secrets (newest first), from its salts, kept for `ttl` seconds:
    a rotation reaches the worker within that time. `fetch(channel)` answers
    {"salts": [hex, ...]} from webhooks.signing_salts (the previous salt only within the overlap)."""

    def __init__(self, key: str, fetch: Callable[[str], Awaitable[dict[str, Any]]], ttl: float = 5.0) -> None:
        self.key, self.fetch, self.ttl = key, fetch, ttl
        self._cache: dict[str, tuple[float, list[str]]] = {}

    async def __call__(self, channel: str) -> list[str]:
        hit = self._cache.get(channel)
        if hit is not None and hit[0] > time.monotonic():
            return hit[1]
        data = await self.fetch(channel)
        found = [rules.derive_secret(self.key, bytes.fromhex(s)) for s in data.get("salts") or []]
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[channel] = (time.monotonic() + self.ttl, found)
        return found
