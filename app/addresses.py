"""The client's address: one rule, computed here for every per-IP limit and for /metrics
(docs/security.md "Client addresses").

- The peer is whoever opened the connection (uvicorn's `scope["client"]`; `serve` runs uvicorn
  without its proxy-header rewriting, so the peer is never replaced by a header).
- When the peer is a trusted proxy (FORWARDED_ALLOW_IPS), `X-Forwarded-For` is read from the
  right: each proxy appends the address it received from, so the rightmost entry that is not a
  trusted proxy is the first one no proxy of ours vouches for: the client. Entries to its left
  were written by the client itself and mean nothing.
- An entry met in that walk that is not an address (`not-an-address-7`, `unknown`, an
  obfuscated name) makes the peer's own address the client: a header can never take a request
  out of every limit.
- The limits key an IPv6 client on its /64 (one subscriber's whole prefix), an IPv4 client (or
  an IPv4-mapped IPv6 one) on its address.
- `*` (trust every peer) is for development only: production refuses it (app/config.py).
"""
from __future__ import annotations

import ipaddress
from collections.abc import Iterable

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

ANY = "*"


def parse_trusted(value: str) -> tuple[Network, ...] | None:
    """FORWARDED_ALLOW_IPS: comma-separated addresses or networks; None for `*` (every peer).
    Raises ValueError on an entry that is neither."""
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if ANY in parts:
        return None
    return tuple(ipaddress.ip_network(p, strict=False) for p in parts)


def _address(text: str | None) -> Address | None:
    if not text:
        return None
    try:
        address = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    if address.version == 6 and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


class ClientAddresses:
    """The client of a request, from its peer and its X-Forwarded-For, under one trusted list."""

    def __init__(self, trusted: Iterable[Network] | None) -> None:
        self.trust_all = trusted is None
        self.trusted = () if trusted is None else tuple(trusted)

    def is_trusted(self, address: Address) -> bool:
        return self.trust_all or any(address in net for net in self.trusted)

    def client(self, peer: str | None, forwarded_for: str | None) -> Address | None:
        """The client's address; None only when the peer itself is no IP address (a unix socket)
        and no trusted proxy names anyone."""
        own = _address(peer)
        if own is None or not forwarded_for or not self.is_trusted(own):
            return own
        address = own
        for entry in reversed(forwarded_for.split(",")):
            named = _address(_strip_port(entry))
            if named is None:
                return own  # not an address: the peer's own, never "no address"
            address = named
            if not self.is_trusted(named):
                return named
        return address  # every entry is a trusted proxy: the farthest of them

    def of(self, req) -> Address | None:
        """The client of a Falcon request."""
        return self.client(req.remote_addr, req.get_header("X-Forwarded-For"))

    def limit_key(self, req) -> str | None:
        """What the per-IP limits count: the client's IPv4 address, or its IPv6 /64."""
        return limit_key(self.of(req))


def limit_key(address: Address | None) -> str | None:
    if address is None:
        return None
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def _strip_port(entry: str) -> str:
    """An X-Forwarded-For entry may carry a port ('192.0.2.1:443', '[2001:db8::1]:443')."""
    entry = entry.strip()
    if entry.startswith("["):
        return entry[1:].split("]", 1)[0]
    if entry.count(":") == 1:
        return entry.split(":", 1)[0]
    return entry
