"""Partner webhooks (Standard Webhooks): events, secrets, endpoint rules and signing.

What the database decides (which events exist, for whom, when they are retried or die) lives
in SQL; this module holds the rules that need a secret or a name lookup, used by the API, the
command line and the worker alike:

  * **Secrets.** A channel's signing secret is never stored. The database keeps a random salt
    per secret generation; the secret is HMAC-SHA256(WEBHOOK_SECRET_KEY, salt), recomputed by
    the command line (which prints it once) and by the worker (which signs with it). A stolen
    database gives no secret without the key, which only the processes hold.
  * **Endpoints.** `check_endpoints` validates a channel's `webhooks` when it is saved:
    a URL string or {"url", "events"}, at most 5; outside development and test, https only, port
    443 or 1024-65535, and a host that resolves to public addresses only (`is_public`, one rule,
    checked again at delivery through an asynchronous resolver with a deadline, `Resolver`).
  * **Delivery.** The signature (`sign`), the backoff between tries (`backoff`) and what is
    kept of an answer (`excerpt`) are rules too; the worker's deliverer that sends a row with
    them is app/outbox/webhooks.py (`WebhookSender`), and the API never loads it.
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
from typing import Any
from urllib.parse import urlsplit

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
    at = datetime.datetime.fromtimestamp(timestamp, tz=datetime.UTC)
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
        _, host, _ = parse_url(url, public_only)
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
