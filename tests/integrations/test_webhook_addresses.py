"""Webhook addresses at send time (issue 29): the worker's deliverer, with a real DNS server on
loopback (UDP, answering from a table, or never answering for the names told to hang) as the
resolver it asks. Every address form that reaches a private, loopback, link-local, metadata or
unique-local address is refused when the row is sent, whether the URL names it or a DNS answer
does; and a partner whose DNS never answers delays no other partner's delivery.
"""
from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
import uuid
from collections.abc import Iterator

import dns.message
import dns.rdatatype
import dns.rrset

from app.outbox.webhooks import EndpointClients, WebhookSender
from app.webhooks import Resolver, derive_secret

SECRET = derive_secret("k" * 40, b"salt")

# IPv6 forms that reach 127.0.0.1, 10.0.0.1 or 169.254.169.254, and the plain ones.
FORMS = ["64:ff9b::127.0.0.1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::a00:1", "::127.0.0.1", "::ffff:0:127.0.0.1",
         "::ffff:127.0.0.1", "2002:7f00:1::", "2002:a9fe:a9fe::1", "fd00:ec2::254", "fe80::1", "::1"]
PLAIN = ["127.0.0.1", "10.0.0.1", "169.254.169.254", "100.64.0.1"]


class DnsServer:
    """A DNS server on a loopback UDP port: A and AAAA answers from `table` (name -> addresses);
    a name in `hang` gets no answer at all, ever."""

    def __init__(self, table: dict[str, list[str]], hang: set[str]) -> None:
        self.table, self.hang = table, hang
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.queries: list[str] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                data, peer = self.sock.recvfrom(4096)
            except OSError:
                return
            query = dns.message.from_wire(data)
            question = query.question[0]
            name = question.name.to_text().rstrip(".")
            self.queries.append(name)
            if name in self.hang:
                continue
            reply = dns.message.make_response(query)
            wanted = "AAAA" if question.rdtype == dns.rdatatype.AAAA else "A"
            found = [a for a in self.table.get(name, []) if (":" in a) == (wanted == "AAAA")]
            if found:
                reply.answer.append(dns.rrset.from_text(question.name, 60, "IN", wanted, *found))
            self.sock.sendto(reply.to_wire(), peer)

    def close(self) -> None:
        self.sock.close()


@contextlib.contextmanager
def dns_server(table: dict[str, list[str]], hang: set[str] = frozenset()) -> Iterator[DnsServer]:
    server = DnsServer(table, set(hang))
    try:
        yield server
    finally:
        server.close()


async def _secrets(channel: str) -> list[str]:
    return [SECRET]


def row(n: int, url: str) -> dict:
    return {"id": n, "url": url, "attempts": 1, "body": {"type": "emission.succeeded"},
            "headers": {"X-Outbox-Webhook": str(uuid.uuid4()), "webhook-id": f"msg_{n}"}}


async def test_every_form_of_a_private_address_is_refused_at_send_by_url_and_by_dns():
    table = {f"form{i}.partner.test": [address] for i, address in enumerate(FORMS + PLAIN)}
    with dns_server(table) as server:
        async with EndpointClients(4, 10.0) as client:
            deliverer = WebhookSender(client, _secrets, public_only=True,
                                  resolver=Resolver([f"127.0.0.1:{server.port}"], timeout=5))
            literal = [await deliverer.deliver(row(i, f"https://[{a}]/hook" if ":" in a else f"https://{a}/hook"))
                       for i, a in enumerate(FORMS + PLAIN)]
            named = [await deliverer.deliver(row(100 + i, f"https://{name}:8443/hook"))
                     for i, name in enumerate(table)]
    for address, result in zip(FORMS + PLAIN + list(table), literal + named):
        assert result["retry"] is True, (address, result)
        assert result["error"].startswith("WEBHOOK_ADDRESS_NOT_PUBLIC"), (address, result)
    assert set(server.queries) >= set(table), "the names were resolved by the DNS server given"


async def test_a_partner_whose_dns_never_answers_delays_no_other_partners_delivery():
    """Twenty partners' names hang at the DNS server (more than any shared thread pool of the
    machine's size holds); another partner's name, asked afterwards, is answered and its row
    is done while every hanging one still waits; the hanging ones end at the resolver's
    deadline as WEBHOOK_HOST_UNRESOLVED."""
    hanging = {f"slow{n}.partner.test" for n in range(20)}
    deadline = 6.0
    with dns_server({"fast.partner.test": ["10.9.8.7"]}, hang=hanging) as server:
        async with EndpointClients(4, 10.0) as client:
            deliverer = WebhookSender(client, _secrets, public_only=True, timeout=30,
                                  resolver=Resolver([f"127.0.0.1:{server.port}"], timeout=deadline))
            slow = [asyncio.create_task(deliverer.deliver(row(n, f"https://{name}/hook")))
                    for n, name in enumerate(sorted(hanging))]
            while len(set(server.queries) & hanging) < len(hanging):  # every slow lookup is in flight
                await asyncio.sleep(0.05)
            started = time.monotonic()
            fast = await deliverer.deliver(row(99, "https://fast.partner.test/hook"))
            fast_seconds = time.monotonic() - started
            still_waiting = sum(not task.done() for task in slow)
            slow_results = await asyncio.gather(*slow)
            slow_seconds = time.monotonic() - started
    # The fast partner's name was answered and judged (10.9.8.7 is private: refused, no connection).
    assert fast["error"].startswith("WEBHOOK_ADDRESS_NOT_PUBLIC"), fast
    assert still_waiting == len(hanging), f"the fast delivery waited for the hanging ones ({fast_seconds:.1f} s)"
    assert all(r["error"].startswith("WEBHOOK_HOST_UNRESOLVED") and r["retry"] for r in slow_results), slow_results
    assert slow_seconds < deadline + 10, "the hanging lookups ended at the resolver's deadline"

