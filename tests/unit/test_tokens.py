"""Tokens the app issues (app/tokens.py encode_hs256) are standard HS256 JWTs: any JWT library
verifies them with the secret, and nothing else does."""
from __future__ import annotations

import jwt
import pytest

from app.tokens import ISSUER, TokenService

SECRET = "tokens-test-secret-0123456789abcdef0123"


def test_issued_token_is_a_standard_hs256_jwt():
    tokens = TokenService(SECRET, "gateway-v1", 3600)
    token = tokens.issue("channel-1", branch="v1", gen=3, channel={"id": "channel-1", "name": "Zoë & Søn"})
    assert jwt.get_unverified_header(token) == {"alg": "HS256", "typ": "JWT"}
    claims = jwt.decode(token, SECRET, algorithms=["HS256"], audience="gateway-v1", issuer=ISSUER,
                        options={"require": ["exp", "iat", "iss", "aud", "sub"]})
    assert claims["sub"] == "channel-1" and claims["gen"] == 3
    assert claims["channel"] == {"id": "channel-1", "name": "Zoë & Søn"}
    assert claims["exp"] - claims["iat"] == 3600
    assert tokens.verify(token).claims == claims
    assert tokens.issue("channel-1") != tokens.issue("channel-1")  # a jti of its own each


def test_issued_token_fails_with_another_secret():
    token = TokenService(SECRET, "gateway-v1", 3600).issue("channel-1")
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(token, SECRET + "x", algorithms=["HS256"], audience="gateway-v1")
    with pytest.raises(Exception) as refused:
        TokenService(SECRET + "x", "gateway-v1", 3600).verify(token)
    assert refused.value.code == "INVALID_TOKEN"


def test_sql_receives_every_claim_it_reads_and_no_other():
    """The claims text a call carries (request.jwt.claims) holds the claims SQL reads, each as the
    token has it: a name read in sql/deploy but left out here would read NULL."""
    import re
    from pathlib import Path

    import orjson

    from app.tokens import SQL_CLAIMS
    read = set()
    for path in (Path(__file__).resolve().parents[2] / "sql" / "deploy").glob("*.sql"):
        read |= set(re.findall(r"claim\('([a-z_]+)'\)", path.read_text()))
    assert read and read <= set(SQL_CLAIMS), f"claims SQL reads that calls do not carry: {read - set(SQL_CLAIMS)}"
    tokens = TokenService(SECRET, "gateway-v1", 3600)
    verified = tokens.verify(tokens.issue("channel-1", branch="v1", gen=3, channel={"id": "channel-1", "name": "x"}))
    assert orjson.loads(verified.claims_json) == {"sub": "channel-1", "branch": "v1", "gen": 3}
    assert verified.claims["channel"] == {"id": "channel-1", "name": "x"}  # the app still has them all
