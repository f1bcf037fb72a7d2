"""One rule for the client's address (app/addresses.py): the rightmost X-Forwarded-For entry that
is not a trusted proxy, the peer's own address when an entry is not an address, IPv6 keyed on
its /64, `*` refused in production. Unit cases, then real X-Forwarded-For through a real `serve`
with FORWARDED_ALLOW_IPS trusting the local proxy (the test itself, on 127.0.0.1)."""
from __future__ import annotations

import ipaddress
import random
import subprocess
import sys

import httpx
import pytest

from app.addresses import ClientAddresses, limit_key, parse_trusted
from app.config import Config, ConfigError
from app.postsales import PREFIX
from tests.conftest import ROOT, child_environ, free_port, running, unique

PROXIES = ClientAddresses(parse_trusted("127.0.0.1, 10.0.0.0/8"))


@pytest.mark.parametrize("peer,forwarded,client", [
    ("192.0.2.7", None, "192.0.2.7"),                              # no proxy
    ("192.0.2.7", "198.51.100.1", "192.0.2.7"),                    # an untrusted peer's header means nothing
    ("127.0.0.1", "198.51.100.1", "198.51.100.1"),                 # the trusted proxy names the client
    ("127.0.0.1", "203.0.113.9, 198.51.100.1", "198.51.100.1"),    # rightmost: the left one is client-written
    ("127.0.0.1", "198.51.100.1, 10.1.2.3", "198.51.100.1"),       # through two trusted proxies
    ("127.0.0.1", "not-an-address-7", "127.0.0.1"),                # not an address: the peer's own
    ("127.0.0.1", "198.51.100.1, unknown", "127.0.0.1"),
    ("127.0.0.1", "", "127.0.0.1"),
    ("127.0.0.1", "[2001:db8::1]:443", "2001:db8::1"),             # with a port
    ("127.0.0.1", "198.51.100.1:8080", "198.51.100.1"),
    ("127.0.0.1", "::ffff:198.51.100.1", "198.51.100.1"),          # IPv4-mapped: the IPv4 client
    ("127.0.0.1", "10.0.0.1, 10.0.0.2", "10.0.0.1"),               # only proxies: the farthest
    (None, "198.51.100.1", None),                                  # no IP peer (a unix socket)
])
def test_the_client_of_a_request(peer, forwarded, client):
    found = PROXIES.client(peer, forwarded)
    assert (str(found) if found else None) == client


def test_ipv6_clients_are_keyed_on_their_64():
    a = limit_key(ipaddress.ip_address("2001:db8:1:2::1"))
    b = limit_key(ipaddress.ip_address("2001:db8:1:2:ffff:1:2:3"))
    assert a == b == "2001:db8:1:2::/64"
    assert limit_key(ipaddress.ip_address("2001:db8:1:3::1")) != a
    assert limit_key(ipaddress.ip_address("192.0.2.7")) == "192.0.2.7"


def test_star_is_refused_in_production_and_names_the_fix():
    with pytest.raises(ConfigError, match="name the proxies"):
        Config.from_env(child_environ(APP_ENV="production", FORWARDED_ALLOW_IPS="*"))
    with pytest.raises(ConfigError, match="not a list of addresses"):
        Config.from_env(child_environ(FORWARDED_ALLOW_IPS="proxy.internal"))
    assert Config.from_env(child_environ(FORWARDED_ALLOW_IPS="*")).trusted_proxies is None  # test: allowed


def test_serve_refuses_star_in_production():
    env = child_environ(APP_ENV="production", FORWARDED_ALLOW_IPS="*", PORT=str(free_port()))
    done = subprocess.run([sys.executable, "-m", "app", "serve"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert "FORWARDED_ALLOW_IPS='*'" in done.stderr and "name the proxies" in done.stderr


# -- through a real `serve` ----------------------------------------------------------------

@pytest.fixture(scope="module")
def proxied():
    """`serve` behind the trusted local proxy, 3 OTP requests an hour per client address
    (requests for unknown e-mails: no mail is sent)."""
    port = free_port()
    env = child_environ(PORT=str(port), FORWARDED_ALLOW_IPS="127.0.0.1",
                        POSTSALES_OTP_IP_PER_HOUR="3", METRICS_ALLOWED_IPS="192.0.2.10")
    url = f"http://127.0.0.1:{port}"
    with running(["serve", "--port", str(port)], env, f"{url}/healthz"):
        yield url


def otp_statuses(url: str, forwarded_for: list[str]) -> list[int]:
    with httpx.Client(base_url=url, timeout=30) as http:
        return [http.post(f"{PREFIX}/auth/otp/request", headers={"X-Forwarded-For": value},
                          json={"email": f"{unique('fwd')}@example.com"}).status_code for value in forwarded_for]


def test_a_value_that_is_not_an_address_counts_against_the_peer(proxied, admin):
    """On main, 30 requests with 30 such values: 0 refused (the limit was off)."""
    admin.execute("DELETE FROM insurance.client_ip_limits WHERE ip = '127.0.0.1'")
    try:
        statuses = otp_statuses(proxied, [f"not-an-address-{i}" for i in range(10)])
    finally:
        admin.execute("DELETE FROM insurance.client_ip_limits WHERE ip = '127.0.0.1'")
    assert statuses == [200] * 3 + [429] * 7


def test_addresses_of_one_ipv6_64_share_one_limit(proxied):
    """On main, 30 addresses of one /64 were 30 buckets: 0 refused."""
    prefix = f"2001:db8:{random.randrange(1, 0xffff):x}:{random.randrange(1, 0xffff):x}"
    statuses = otp_statuses(proxied, [f"{prefix}:{random.randrange(1, 0xffff):x}::{i + 1:x}" for i in range(10)])
    assert statuses == [200] * 3 + [429] * 7


def test_the_client_is_the_rightmost_untrusted_entry(proxied):
    """A client writes what it likes to the left of what the proxy appends: the leftmost
    entry (uvicorn's choice with `*`) must not pick the bucket."""
    client = f"198.51.100.{random.randrange(1, 255)}"
    statuses = otp_statuses(proxied, [f"203.0.113.{i}, {client}" for i in range(1, 6)])
    assert statuses == [200] * 3 + [429] * 2


def test_metrics_allow_the_client_named_by_the_trusted_proxy_only(proxied):
    with httpx.Client(base_url=proxied, timeout=30) as http:
        assert http.get("/metrics", headers={"X-Forwarded-For": "192.0.2.10"}).status_code == 200
        # Written by the client to the left of what the proxy saw: not the client.
        assert http.get("/metrics", headers={"X-Forwarded-For": "192.0.2.10, 198.51.100.1"}).status_code == 403
        assert http.get("/metrics", headers={"X-Forwarded-For": "nonsense"}).status_code == 403
        assert http.get("/metrics").status_code == 403  # the proxy itself is not allowed here
