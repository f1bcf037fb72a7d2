"""app/webhooks.py without the network: secrets, signatures the standardwebhooks library
verifies, the endpoint rules and the backoff."""
from __future__ import annotations

import json
import time

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from app import webhooks
from app.webhooks import EndpointError, check_endpoints


def test_a_derived_secret_is_a_standard_webhooks_secret_and_both_signatures_verify():
    new, old = webhooks.derive_secret("k" * 40, b"salt-new"), webhooks.derive_secret("k" * 40, b"salt-old")
    assert new.startswith("whsec_") and new != old
    assert webhooks.derive_secret("k" * 40, b"salt-new") == new, "the same key and salt, the same secret"
    assert webhooks.derive_secret("other key" * 5, b"salt-new") != new
    body = json.dumps({"type": "emission.succeeded"})
    now = int(time.time())
    header = webhooks.sign([new, old], "msg_1", now, body)
    assert header.count("v1,") == 2
    headers = {"webhook-id": "msg_1", "webhook-timestamp": str(now), "webhook-signature": header}
    assert Webhook(new).verify(body, headers) == {"type": "emission.succeeded"}
    assert Webhook(old).verify(body, headers) == {"type": "emission.succeeded"}
    with pytest.raises(WebhookVerificationError):
        Webhook(webhooks.derive_secret("k" * 40, b"third")).verify(body, headers)


@pytest.mark.parametrize("url, code", [
    ("http://partner.example/hook", "WEBHOOK_URL_NOT_HTTPS"),
    ("https://127.0.0.1/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),
    ("https://10.1.2.3/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),
    ("https://169.254.169.254/latest/meta-data", "WEBHOOK_ADDRESS_NOT_PUBLIC"),
    ("https://[::1]/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),
    ("https://[::ffff:192.168.0.1]/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),
    ("https://100.64.0.1/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),
    ("https://localhost/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),
    ("https://api.localhost/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),
    # IPv6 forms that reach a private, loopback or metadata IPv4 address (issue 29)
    ("https://[64:ff9b::127.0.0.1]/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),       # NAT64, well-known prefix
    ("https://[64:ff9b::a9fe:a9fe]/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),       # ... to 169.254.169.254
    ("https://[64:ff9b:1::a00:1]/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),         # NAT64, local-use prefix
    ("https://[64:ff9b:1::808:808]/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),       # local-use, whatever it embeds
    ("https://[::127.0.0.1]/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),              # IPv4-compatible
    ("https://[::8.8.8.8]/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),                # deprecated, never routed
    ("https://[::ffff:0:127.0.0.1]/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),       # IPv4-translated
    ("https://[::ffff:127.0.0.1]/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),         # IPv4-mapped
    ("https://[2002:7f00:1::]/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),            # 6to4 of 127.0.0.1
    ("https://[2002:a9fe:a9fe::1]/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),        # 6to4 of the metadata address
    ("https://[fd00:ec2::254]/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),            # unique-local (AWS metadata)
    ("https://[fe80::1]/hook", "WEBHOOK_ADDRESS_NOT_PUBLIC"),                  # link-local
    # the port rule: 443 or 1024-65535
    ("https://partner.example:22/hook", "WEBHOOK_PORT_NOT_ALLOWED"),
    ("https://partner.example:25/hook", "WEBHOOK_PORT_NOT_ALLOWED"),
    ("https://partner.example:80/hook", "WEBHOOK_PORT_NOT_ALLOWED"),
    ("/relative", "WEBHOOK_URL_INVALID"),
    ("https://user:pw@partner.example/", "WEBHOOK_URL_INVALID"),
    ("ftp://partner.example/", "WEBHOOK_URL_INVALID"),
])
async def test_outside_development_only_https_to_public_addresses(url, code):
    with pytest.raises(EndpointError) as refused:
        await check_endpoints([url], public_only=True)
    assert refused.value.code == code


async def test_endpoints_are_normalised_and_limited():
    got = await check_endpoints(["http://127.0.0.1:9/a", {"url": "http://127.0.0.1:9/b", "events": ["emission.failed"]}],
                                public_only=False)
    assert got == [{"url": "http://127.0.0.1:9/a", "events": list(webhooks.EVENTS)},
                   {"url": "http://127.0.0.1:9/b", "events": ["emission.failed"]}]
    with pytest.raises(EndpointError) as many:
        await check_endpoints([f"http://127.0.0.1/{n}" for n in range(6)], public_only=False)
    assert many.value.code == "WEBHOOKS_TOO_MANY"
    for bad in ("http://x/", [{"url": "http://x/", "events": ["policy.sold"]}], [{"uri": "http://x/"}], [42]):
        with pytest.raises(EndpointError):
            await check_endpoints(bad, public_only=False)


@pytest.mark.parametrize("url", [
    "https://[64:ff9b::808:808]/hook",   # NAT64 of a public address: an IPv6-only partner
    "https://[2002:808:808::1]/hook",    # 6to4 of a public address
    "https://[2606:4700::1111]:8443/hook",
    "https://8.8.8.8:443/hook",
    "https://8.8.8.8:1024/hook",
    "https://8.8.8.8:65535/hook",
])
async def test_public_addresses_and_allowed_ports_are_accepted(url):
    assert (await check_endpoints([url], public_only=True))[0]["url"] == url


def test_backoff_doubles_from_the_base_up_to_the_cap():
    for attempt, top in ((1, 10), (2, 20), (3, 40), (20, 3600)):
        for _ in range(20):
            assert top / 2 <= webhooks.backoff(attempt, 10, 3600) <= top
