"""Partner webhooks (Standard Webhooks): secrets, endpoint rules, signing and one delivery.

What the database decides (which events exist, for whom, when they are retried or die) lives
in SQL; this module holds what needs a secret or the network:

  * **Secrets.** A channel's signing secret is never stored. The database keeps a random salt
    per secret generation; the secret is HMAC-SHA256(WEBHOOK_SECRET_KEY, salt), recomputed by
    the command line (which prints it once) and by the worker (which signs with it). A stolen
    database gives no secret without the key, which only the processes hold.
  * **Endpoints.** `check_endpoints` validates a channel's `webhooks` when it is saved:
    a URL string or {"url", "events"}, at most 5; outside development and test, https only, port
    443 or 1024-65535, and a host that resolves to public addresses only (`is_public`, one rule,
    checked again at delivery through an asynchronous resolver with a deadline, `Resolver`).
  * **Delivery.** `Deliverer.deliver` sends one outbox row: webhook-id (the row's, stable across
    retries), webhook-timestamp (this attempt's), webhook-signature (`v1,<base64>`, two of them
    during WEBHOOK_SECRET_OVERLAP after a rotation); a total deadline (WEBHOOK_TIMEOUT); no
    redirect followed; at most 64 KiB of the answer read, and only a short cleaned excerpt
    kept. A 2xx is delivered; anything else is retried by the outbox with this module's
    backoff (WEBHOOK_RETRY_BASE_SECONDS, WEBHOOK_RETRY_CAP_SECONDS). Each endpoint (its URL)
    has at most WEBHOOK_ENDPOINT_CONCURRENCY deliveries in flight; rows beyond it wait their
    turn in this worker while the wait, judged from the endpoint's recent answers, stays short
    (a third of the lease), and are otherwise handed back to the queue for about that wait,
    their attempt uncounted. Waiting rows hold none of the worker's slots (`waiting`), so one
    slow partner holds a few slots, never all of them, and never the queue's head.
"""
from __future__ import annotations

import asyncio
import base64
import datetime
import functools
import hashlib
import hmac
import ipaddress
import random
import re
import ssl
import time
from typing import Any, Awaitable, Callable
from urllib.parse import urlsplit

import orjson

from app.outbox.http import failure_name, session

SECRET_PREFIX = "whsec_"
EVENTS = ("emission.succeeded", "emission.failed", "emission.abandoned")
MAX_ENDPOINTS = 5
MAX_URL_LENGTH = 2000
MAX_ANSWER_BYTES = 64 * 1024
EXCERPT_CHARS = 200
# The outbox row header that marks a webhook: the channel whose secret signs it (not sent on).
CHANNEL_HEADER = "X-Outbox-Webhook"
WEBHOOK_ID = "webhook-id"
MAX_DEFER_SECONDS = 60   # a row handed back for its busy endpoint comes back within this

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class EndpointError(ValueError):
    """A webhook endpoint that may not be saved or called; `code` is stable, str() says why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------- secrets

def derive_secret(key: str, salt: bytes) -> str:
    """The whsec_ secret of one generation: HMAC-SHA256(WEBHOOK_SECRET_KEY, salt)."""
    raw = hmac.new(key.encode(), b"insurance-webhook-secret:" + salt, hashlib.sha256).digest()
    return SECRET_PREFIX + base64.b64encode(raw).decode()


def new_salt() -> bytes:
    import secrets
    return secrets.token_bytes(32)


def sign(secrets_: list[str], msg_id: str, timestamp: int, body: str) -> str:
    """The webhook-signature header: `v1,<base64>` per secret, space separated (newest first),
    made by the standardwebhooks library itself."""
    at = datetime.datetime.fromtimestamp(timestamp, tz=datetime.timezone.utc)
    return " ".join(_signer(s).sign(msg_id, at, body) for s in secrets_)


@functools.lru_cache(maxsize=1024)
def _signer(secret: str):
    """The library's signer of one secret, made once per channel and generation (it decodes
    the secret)."""
    from standardwebhooks.webhooks import Webhook
    return Webhook(secret)


# ---------------------------------------------------------------- endpoint rules

# Special-purpose IPv6 prefixes that carry an IPv4 address in their last 32 bits (or, for 6to4,
# in bits 16-48): the address they reach is that IPv4 address, judged as such.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")           # RFC 6052 well-known NAT64 prefix
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")   # RFC 8215 local-use NAT64: the operator's own
_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")   # RFC 2765 IPv4-translated
_COMPATIBLE = ipaddress.ip_network("::/96")             # RFC 4291 IPv4-compatible (deprecated)
# Ports a webhook may use outside development: https's own, or any unprivileged one (1024-65535).
# The well-known ports below 1024 (ssh, smtp, dns, ...) belong to services no partner receives on.
HTTPS_PORT = 443
MIN_UNPRIVILEGED_PORT = 1024


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address reaches through: IPv4-mapped, IPv4-translated,
    IPv4-compatible, NAT64 (well-known prefix) or 6to4; None for any other."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if any(address in net for net in (_NAT64, _TRANSLATED, _COMPATIBLE)):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """The one address rule of webhook endpoints, at save and at send: a global unicast address.
    Refused: loopback, private, link-local (the cloud metadata address 169.254.169.254 is one),
    unique-local (fc00::/7, where fd00:ec2::254 lives), shared (100.64/10), multicast, reserved,
    unspecified, and every IPv6 form that reaches one of those through an embedded IPv4 address
    (IPv4-mapped ::ffff:a.b.c.d, NAT64 64:ff9b::a.b.c.d, 6to4 2002:aabb:ccdd::). The forms that
    are never routed on the internet are refused whatever they embed: NAT64's local-use prefix
    64:ff9b:1::/48 (the operator's own translator, which would reach its private networks),
    IPv4-compatible ::a.b.c.d and IPv4-translated ::ffff:0:a.b.c.d."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id or any(address in net for net in (_NAT64_LOCAL, _TRANSLATED, _COMPATIBLE)):
            return False
        inner = embedded_ipv4(address)
        if inner is not None:
            address = inner
    return address.is_global and not address.is_multicast


# A host's resolution at send time has this long (within the delivery's own WEBHOOK_TIMEOUT).
RESOLVE_TIMEOUT = 5.0


class Resolver:
    """Asynchronous DNS (dnspython) with a deadline: a lookup is a few UDP packets on the event
    loop, never a thread of a shared pool, so one partner's resolver that never answers delays
    nobody else's delivery; it ends at `timeout` as WEBHOOK_HOST_UNRESOLVED. `nameservers`
    ("ip" or "ip:port") replaces /etc/resolv.conf's. `localhost` and `*.localhost` are loopback
    (RFC 6761), as a system resolver says."""

    def __init__(self, nameservers: list[str] | None = None, timeout: float = RESOLVE_TIMEOUT) -> None:
        import dns.asyncresolver
        self.timeout = timeout
        self._resolver = dns.asyncresolver.Resolver(configure=not nameservers)
        if nameservers:
            self._resolver.nameservers = [n.rsplit(":", 1)[0] if n.count(":") == 1 else n for n in nameservers]
            ports = {int(n.rsplit(":", 1)[1]) for n in nameservers if n.count(":") == 1}
            if ports:
                self._resolver.port = ports.pop()

    async def __call__(self, host: str) -> list[str]:
        import dns.exception
        import dns.resolver
        name = host.rstrip(".").lower()
        if name == "localhost" or name.endswith(".localhost"):
            return ["127.0.0.1", "::1"]
        try:
            async with asyncio.timeout(self.timeout):
                answer = await self._resolver.resolve_name(name, lifetime=self.timeout)
        except (TimeoutError, dns.exception.Timeout):
            raise EndpointError("WEBHOOK_HOST_UNRESOLVED",
                                f"{host} did not resolve within {self.timeout:g} s") from None
        except (dns.exception.DNSException, UnicodeError, ValueError) as exc:
            raise EndpointError("WEBHOOK_HOST_UNRESOLVED", f"{host} does not resolve ({exc.__class__.__name__})") from None
        return sorted(set(answer.addresses()))


_default_resolver: Resolver | None = None


def default_resolver() -> Resolver:
    """The system's resolvers (/etc/resolv.conf), made once."""
    global _default_resolver
    if _default_resolver is None:
        _default_resolver = Resolver()
    return _default_resolver


async def resolve(host: str, resolver: Resolver | None = None) -> list[str]:
    """Every address `host` resolves to (a literal address: itself)."""
    try:
        return [str(ipaddress.ip_address(host.strip("[]")))]
    except ValueError:
        pass
    return await (resolver or default_resolver())(host)


async def check_address(host: str, resolver: Resolver | None = None) -> list[str]:
    """The host's addresses when every one is public (`is_public`); EndpointError otherwise."""
    addresses = await resolve(host, resolver)
    if not addresses:
        raise EndpointError("WEBHOOK_HOST_UNRESOLVED", f"{host} does not resolve")
    bad = [a for a in addresses if not is_public(ipaddress.ip_address(a))]
    if bad:
        raise EndpointError("WEBHOOK_ADDRESS_NOT_PUBLIC",
                            f"{host} resolves to an address that is not public ({bad[0]})")
    return addresses


def parse_url(url: Any, public_only: bool) -> tuple[str, str, int]:
    """(scheme, host, port) of an absolute http(s) URL; https only when public_only."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_LENGTH or _CONTROL.search(url):
        raise EndpointError("WEBHOOK_URL_INVALID", f"a webhook url is a string of 1 to {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise EndpointError("WEBHOOK_URL_INVALID", f"{url!r} is not a URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointError("WEBHOOK_URL_INVALID", f"{url!r} is not an absolute http(s) URL")
    if parts.username or parts.password:
        raise EndpointError("WEBHOOK_URL_INVALID", "a webhook url carries no credentials")
    if public_only and parts.scheme != "https":
        raise EndpointError("WEBHOOK_URL_NOT_HTTPS", f"{url!r}: webhooks go to https URLs only")
    port = port or (HTTPS_PORT if parts.scheme == "https" else 80)
    if public_only and port != HTTPS_PORT and port < MIN_UNPRIVILEGED_PORT:
        raise EndpointError("WEBHOOK_PORT_NOT_ALLOWED",
                            f"{url!r}: a webhook port is {HTTPS_PORT} or {MIN_UNPRIVILEGED_PORT}-65535")
    return parts.scheme, parts.hostname, port


async def check_endpoints(webhooks: Any, public_only: bool, resolver: Resolver | None = None) -> list[dict[str, Any]]:
    """A channel's `webhooks`, normalised to [{"url", "events"}] (events: every event when not
    given); EndpointError for the first rule broken. public_only outside development and test."""
    if webhooks is None:
        return []
    if not isinstance(webhooks, list):
        raise EndpointError("WEBHOOKS_INVALID", "webhooks is a list of URLs or {\"url\", \"events\"}")
    if len(webhooks) > MAX_ENDPOINTS:
        raise EndpointError("WEBHOOKS_TOO_MANY", f"at most {MAX_ENDPOINTS} webhook endpoints a channel")
    out = []
    for entry in webhooks:
        if isinstance(entry, str):
            url, events = entry, list(EVENTS)
        elif isinstance(entry, dict) and set(entry) <= {"url", "events"} and "url" in entry:
            url, events = entry["url"], entry.get("events", list(EVENTS))
            if (not isinstance(events, list) or not events
                    or any(not isinstance(e, str) or e not in EVENTS for e in events)):
                raise EndpointError("WEBHOOK_EVENTS_INVALID", f"events is a non-empty list of {', '.join(EVENTS)}")
        else:
            raise EndpointError("WEBHOOKS_INVALID", "each webhook is a URL or {\"url\", \"events\"}")
        _, host, port = parse_url(url, public_only)
        if public_only:
            await check_address(host, resolver)
        out.append({"url": url, "events": list(dict.fromkeys(events))})
    if len({e["url"] for e in out}) != len(out):
        raise EndpointError("WEBHOOKS_INVALID", "a webhook url is listed twice")
    return out


# ---------------------------------------------------------------- delivery

def backoff(attempt: int, base: float, cap: float) -> float:
    """Seconds before the next try after the `attempt`-th failed one: min(cap, base * 2^(n-1)),
    with equal jitter (a uniform delay in [d/2, d])."""
    d = min(cap, base * 2 ** min(max(attempt, 1) - 1, 30))
    return d / 2 + random.random() * d / 2


def excerpt(raw: bytes) -> str:
    """What is kept of an answer: its first characters, control characters removed."""
    return _CONTROL.sub("", raw[:EXCERPT_CHARS * 4].decode("utf-8", "replace"))[:EXCERPT_CHARS]


Secrets = Callable[[str], Awaitable[list[str]]]  # channel id -> its secrets, newest first


class EndpointClients:
    """The webhooks' HTTP clients (aiohttp sessions, app/outbox/http.py): one connection pool per
    endpoint (its URL) of at most `per_endpoint` connections, all kept alive, and one TLS context
    for all of them. One pool for every partner made a webhook cost more the more partners there
    were (httpx's pool closed an idle connection whenever it held more than it kept alive). No
    cookies kept, nothing followed (redirects) or trusted from the environment (proxies);
    `timeout` bounds a connection's opening, the Deliverer's deadline the whole call. `tls`: the
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

    async def __aenter__(self) -> "EndpointClients":
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


class Deliverer:
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
                "retryIn": round(backoff(row.get("attempts") or 1, self.retry_base, self.retry_cap), 3)}

    async def deliver(self, row: dict[str, Any]) -> dict[str, Any]:
        headers = dict(row.get("headers") or {})
        channel = str(headers.pop(CHANNEL_HEADER))
        try:
            scheme, host, port = parse_url(row["url"], self.public_only)
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
        import aiohttp  # the worker's (EndpointClients): loaded by then
        msg_id = str(headers.get(WEBHOOK_ID) or f"msg_outbox_{row['id']}")
        body = orjson.dumps(row.get("body")).decode()
        try:
            async with asyncio.timeout(self.timeout):  # the whole call: resolve, connect, send, read
                url, server_hostname, host_header = row["url"], None, None
                if self.public_only:
                    # Checked again now (DNS may have changed since the save), and the connection
                    # goes to the address checked, so a second lookup cannot point elsewhere.
                    address = (await check_address(host, self.resolver))[0]
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
                             "webhook-signature": sign(secrets_, msg_id, timestamp, body)})
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
                                             f"({excerpt(response.headers.get('location', '').encode())})", "failed")
        return self._failed(row, status, f"WEBHOOK_HTTP_{status}: {excerpt(read)}", "failed")


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
        found = [derive_secret(self.key, bytes.fromhex(s)) for s in data.get("salts") or []]
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[channel] = (time.monotonic() + self.ttl, found)
        return found
