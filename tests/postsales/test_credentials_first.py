"""Credentials before bodies: a request without a good token is refused for the token, and its
body is never read (a malformed or huge body does not change the answer)."""
from __future__ import annotations

import pytest

from tests.postsales.conftest import PREFIX

ROUTES = [("PATCH", "/risk-items/1"), ("POST", "/risk-items/1/beneficiaries"),
          ("PATCH", "/risk-items/1/beneficiaries/2")]
BODIES = [b"{not json", b"[1, 2]", b'{"x": "' + b"a" * (3 * 1024 * 1024) + b'"}']


@pytest.mark.parametrize("method,path", ROUTES)
@pytest.mark.parametrize("body", BODIES, ids=["malformed", "not-an-object", "3MB"])
async def test_a_bad_token_is_refused_before_the_body_is_read(ps_client, method, path, body):
    headers = {"Content-Type": "application/json"}
    missing = await ps_client.simulate_request(method, PREFIX + path, headers=headers, body=body)
    assert missing.status_code == 400 and missing.json["error"]["code"] == "MISSING_BEARER_TOKEN", missing.text
    invalid = await ps_client.simulate_request(method, PREFIX + path, body=body,
                                               headers={**headers, "Authorization": "Bearer a.b.c"})
    assert invalid.status_code == 401 and invalid.json["error"]["code"] == "INVALID_TOKEN", invalid.text
