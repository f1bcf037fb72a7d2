"""JWT issue and verification, one `TokenService` per surface or gateway branch.

Each service has its own secret and its own `aud`, so a token is refused outside its
branch even where two secrets were set equal by mistake. Verification pins HS256 and
requires exp, iat, iss, aud and sub. Verified tokens are cached (bounded, expiring with
the token): pyjwt's verify costs about a third of a simple route's budget here.
"""
from __future__ import annotations

import base64
import hmac
import secrets
import time
from typing import Any

import jwt
import orjson

from app.db import SERVICE, Identity

ALGORITHM = "HS256"
LEEWAY_SECONDS = 10
ISSUER = "insurance-backend"


def _b64(raw: bytes) -> bytes:
    return base64.urlsafe_b64encode(raw).rstrip(b"=")


# The JOSE header pyjwt writes for HS256 (its keys sorted): every token of this app has it.
_HEADER = _b64(b'{"alg":"HS256","typ":"JWT"}')


def encode_hs256(payload: dict[str, Any], key: bytes) -> str:
    """A compact HS256 JWS of `payload`: the header and claims `jwt.encode(payload, key, "HS256")`
    writes (non-ASCII as UTF-8, where json escapes it), at a fifth of its cost (pyjwt serializes
    with the json module twice and checks the key's shape on every call; this uses orjson). Issuing a token was
    the largest piece of the gateway authorize route's own CPU (issue 23, py-spy; see
    docs/performance.md). Verification stays pyjwt's (`TokenService.verify`)."""
    signing_input = _HEADER + b"." + _b64(orjson.dumps(payload))
    return (signing_input + b"." + _b64(hmac.digest(key, signing_input, "sha256"))).decode()


def _error(status: int, code: str, message: str):
    # Imported here: the worker issues tokens and never verifies one, so it does not carry
    # the HTTP stack (falcon, about 5 MB) that app.errors brings.
    from app.errors import ApiError
    return ApiError(status, code, message)


def missing_bearer():
    return _error(400, "MISSING_BEARER_TOKEN", "Missing bearer token")


def expired_token():
    return _error(401, "TOKEN_EXPIRED", "Access token expired")


def invalid_token():
    return _error(401, "INVALID_TOKEN", "Invalid access token")


def bearer_token(authorization: str | None) -> str:
    """The token of an `Authorization: Bearer <token>` header, or the seed's 400."""
    if not authorization:
        raise missing_bearer()
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token or token.count(".") != 2:
        raise missing_bearer()
    return token


# The claims SQL reads (`insurance.claim(name)` in sql/deploy; tests/unit/test_tokens.py keeps the
# list whole): only these reach the database. Every policy and entry point parses the claims
# text again (jsonb) for each claim it reads, 5 us for a gateway token's whole claims against
# under 2 for these (docs/performance.md).
SQL_CLAIMS = ("sub", "email", "role", "gen", "branch")


class VerifiedToken(Identity):
    """Claims of a verified token, and the identity SQL runs as (the role of the token's
    surface, the claims SQL reads as JSON text). Cached with the token, so a request that
    presents a known token allocates nothing for its identity."""

    __slots__ = ("claims", "expires_at")

    def __init__(self, claims: dict[str, Any], role: str | None = None) -> None:
        super().__init__(role, orjson.dumps({name: claims[name] for name in SQL_CLAIMS if name in claims}).decode())
        self.claims = claims
        self.expires_at = float(claims["exp"])


def service_tokens(secret: str) -> TokenService:
    """The service-role bearer of /api/integrations/*: the worker issues it, the app verifies it,
    so both must build it alike."""
    return TokenService(secret, "service", 3600, issuer=f"{ISSUER}-service", role=SERVICE)


class TokenService:
    """Issues and verifies the tokens of one surface or branch."""

    def __init__(self, secret: str, audience: str, lifetime: int, issuer: str = ISSUER,
                 cache_size: int = 10_000, role: str | None = None,
                 string_claims: tuple[str, ...] = ()) -> None:
        self._secret = secret
        self._key = secret.encode()
        self.role = role  # the database role its bearers call SQL as
        self.string_claims = string_claims  # claims a token must carry as strings (post-sales: email)
        self.audience = audience
        self.issuer = issuer
        self.lifetime = lifetime
        self._cache: dict[str, VerifiedToken] = {}
        self._cache_size = cache_size
        # Where a caller went wrong: the sibling services whose tokens it may present by
        # mistake ({audience: (service, URL prefix)}), and where this one's tokens are issued.
        self.siblings: dict[str, tuple[TokenService, str]] = {}
        self.authorize_path: str | None = None

    def issue(self, subject: str, **claims: Any) -> str:
        now = int(time.time())
        payload = {"iss": self.issuer, "aud": self.audience, "sub": subject, "iat": now,
                   "exp": now + self.lifetime, "jti": secrets.token_urlsafe(12), **claims}
        return encode_hs256(payload, self._key)

    def verify(self, token: str) -> VerifiedToken:
        cached = self._cache.get(token)
        now = time.time()
        if cached is not None:
            if cached.expires_at + LEEWAY_SECONDS > now:
                return cached
            del self._cache[token]
            raise expired_token()
        try:
            claims = jwt.decode(
                token, self._secret, algorithms=[ALGORITHM], audience=self.audience,
                issuer=self.issuer, leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
            )
        except jwt.ExpiredSignatureError:
            raise expired_token() from None
        except jwt.PyJWTError:
            raise self._misdirected(token) or invalid_token() from None
        if not all(isinstance(claims.get(name), str) for name in self.string_claims):
            raise invalid_token()
        verified = VerifiedToken(claims, self.role)
        if len(self._cache) >= self._cache_size:
            self._cache.clear()  # cheap bound; a full cache refills from hot tokens at once
        self._cache[token] = verified
        return verified

    def _misdirected(self, token: str):
        """A genuine token of a sibling (another gateway branch, another surface): the 401
        then says where it belongs. Only what that sibling's secret verifies is believed."""
        from app.errors import ApiError  # see _error
        try:
            audience = jwt.decode(token, options={"verify_signature": False}).get("aud")
            sibling, prefix = self.siblings[audience]
            sibling.verify(token)
        except (jwt.PyJWTError, KeyError, TypeError, ApiError):
            return None
        error = invalid_token()
        error.details = {"hint": f"this token belongs to {audience}: call the routes under {prefix} with it, "
                                 f"or get a token for this one from its authorize route",
                         "belongsTo": audience, "prefix": prefix}
        return error

    def verify_header(self, authorization: str | None) -> VerifiedToken:
        return self.verify(bearer_token(authorization))


class DeviceTokens:
    """OWASP device cookies ("Slow down online guessing attacks with device cookies"): a client
    that has completed a login for an account holds a signed, expiring token naming the account,
    which exempts it from that account's ceiling (never from the per-(account, address) limits).

    Python checks the signature, the expiry, the audience and the account; the database checks
    what may have ended since (`gen`: an operator's device generation, bumped when the user is
    disabled, the password changes or sessions are ended), in the same call as the limits.
    One secret (DEVICE_TOKEN_SECRET), one audience per surface: a holder's token is no
    operator's."""

    def __init__(self, secret: str, surface: str, lifetime: int) -> None:
        self._tokens = TokenService(secret, f"device/{surface}", lifetime, issuer=f"{ISSUER}-device",
                                    cache_size=1_000)
        self.lifetime = lifetime

    def issue(self, account: str, **claims: Any) -> str:
        return self._tokens.issue(account, **claims)

    def claims(self, token: str | None, account: str) -> dict[str, Any] | None:
        """The claims of `token` when it is a valid device token of `account`; None otherwise (no
        token, another account's, expired, forged): such a request meets the ceilings as any."""
        if not token or len(token) > 2048 or token.count(".") != 2:
            return None
        from app.errors import ApiError  # see _error
        try:
            claims = self._tokens.verify(token).claims
        except ApiError:
            return None
        return claims if claims.get("sub") == account else None
