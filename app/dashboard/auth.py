"""Dashboard sessions: POST /api/auth/login, POST /api/auth/logout, and the cookie check of /api/trpc.

A back-office user logs in with e-mail and password (argon2 hash, verified here: SQL cannot);
the answer sets an HttpOnly, SameSite=Lax cookie whose value is a random token. The database
keeps only its SHA-256 in insurance.dashboard_sessions (expiring, revocable). Attempts are
reserved in PostgreSQL before the password is verified, per (e-mail, address), per address and
per e-mail (a high account-wide ceiling), and refunded on success (dashboard.login_user answers
RATE_LIMITED once none is left), so a burst cannot outrun them and an address that guesses
locks out itself, not the owner elsewhere (docs/security.md).

A successful login also sets the HttpOnly cookie `device` (app/tokens.py DeviceTokens: the
account and its device generation, signed): a later login for that account with it is exempt
from the account-wide ceiling, never from the per-(e-mail, address) limit. Disabling the
user, a new password or ended sessions bump the generation, which ends every such cookie.
"""
from __future__ import annotations

import asyncio
import functools
import hashlib
import secrets
from urllib.parse import urlsplit

import argon2
import falcon
import orjson
import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app import db, errors, validation
from app.config import Config
from app.dashboard.passwords import PASSWORD_HASHER
from app.responses import send

log = structlog.get_logger("app.dashboard.auth")

SESSION_COOKIE = "dashboard_session"
DEVICE_COOKIE = "device"
DEVICE_COOKIE_PATH = "/api/auth/login"  # sent only where it counts
# The X-RateLimit-Limit of a refused login when dashboard.login_user does not name its limit:
# the per-(e-mail, address) one a client meets first (dashboard._login_keys; a test compares).
LOGIN_FAILURES_PER_ADDRESS = 5
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def secure_cookie(config: Config) -> bool:
    """Secure, unless development or test is served on localhost (plain HTTP)."""
    local = urlsplit(config.public_base_url).hostname in _LOCAL_HOSTS
    return not (config.env in ("development", "test") and local)


def allowed_origins(config: Config) -> frozenset[str]:
    """The app's own origin (PUBLIC_BASE_URL) and DASHBOARD_ALLOWED_ORIGINS."""
    own = urlsplit(config.public_base_url)
    return frozenset({f"{own.scheme}://{own.netloc}", *config.dashboard_allowed_origins})


def origin_allowed(req: falcon.Request, origins: frozenset[str]) -> bool:
    """A browser names the page's origin on every POST; a request without Origin is no browser's."""
    origin = req.get_header("Origin")
    return origin is None or origin in origins


def cors(req: falcon.Request, resp: falcon.Response, origins: frozenset[str], preflight: bool = False) -> None:
    """CORS with credentials for a dashboard served from an allowed origin other than the app's
    own (DASHBOARD_ALLOWED_ORIGINS); a preflight also says which methods and headers may come."""
    resp.append_header("Vary", "Origin")
    origin = req.get_header("Origin")
    if origin is None or origin not in origins:
        return
    resp.set_header("Access-Control-Allow-Origin", origin)
    resp.set_header("Access-Control-Allow-Credentials", "true")
    if preflight:
        resp.set_header("Access-Control-Allow-Methods", "GET, POST")
        resp.set_header("Access-Control-Allow-Headers", "content-type, trpc-accept")
        resp.set_header("Access-Control-Max-Age", "600")


class Preflight:
    """OPTIONS of the dashboard's routes: 204 with the CORS answer for an allowed origin."""

    origins: frozenset[str]
    allow = "POST, OPTIONS"

    async def on_options(self, req: falcon.Request, resp: falcon.Response, **params: str) -> None:
        resp.status = falcon.HTTP_204
        resp.set_header("Allow", self.allow)
        cors(req, resp, self.origins, preflight=True)


def cookie_token(req: falcon.Request) -> str | None:
    """The session cookie's value, when it has a plausible one."""
    token = next(iter(req.get_cookie_values(SESSION_COOKIE) or ()), None)
    return token if token and len(token) <= 200 else None


async def session_identity(database: db.Database, req: falcon.Request) -> db.Identity | None:
    """The identity of the request's live dashboard session (insurance_dashboard with the
    session's claims), or None."""
    token = cookie_token(req)
    if token is None:
        return None
    claims = await database.call(db.ANON, None, "dashboard.session_claims", token_hash(token))
    return db.Identity(db.DASHBOARD, claims) if claims else None


def session_identity_in_statement(req: falcon.Request) -> db.Identity | None:
    """The identity of the request's session cookie, checked by the call itself: its claims
    come from dashboard.session_claims_or_deny inside the procedure's statement (one round
    trip; PT401 UNAUTHORIZED when the session is not live). None without a cookie."""
    token = cookie_token(req)
    if token is None:
        return None
    return db.Identity(db.DASHBOARD, None, claims_from=("dashboard.session_claims_or_deny", token_hash(token)))


async def session(req: falcon.Request, resp: falcon.Response, resource, params: dict) -> None:
    """falcon.before hook of a dashboard page: the session's identity on req.context, or 401."""
    identity = await session_identity(resource.db, req)
    if identity is None:
        raise errors.ApiError(401, "UNAUTHORIZED", "a valid dashboard session is required")
    req.context.identity = identity


@functools.cache
def _dummy_hash() -> str:
    return PASSWORD_HASHER.hash(secrets.token_urlsafe(16))


def _verify(password_hash: str, password: str) -> bool:
    try:
        return PASSWORD_HASHER.verify(password_hash, password)
    except (argon2.exceptions.VerificationError, argon2.exceptions.InvalidHashError):
        return False


class LoginInput(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    email: str = Field(min_length=3, max_length=validation.EMAIL_MAX_LENGTH, pattern=validation.EMAIL)
    password: str = Field(min_length=1, max_length=1024)


async def _login_input(req: falcon.Request) -> LoginInput:
    body = await validation.read_json(req, validation.ANONYMOUS_BODY_BYTES)  # 415, 413, 400
    try:
        return LoginInput.model_validate(body)
    except ValidationError as exc:
        fields = sorted({".".join(map(str, e["loc"])) or "body" for e in exc.errors()})
        raise errors.bad_request("e-mail and password are required", details={"fields": fields}) from None


class _SessionRoute(Preflight):
    """Login and logout: POSTs that a foreign page must not make (login CSRF, forced logout)."""

    def __init__(self, services) -> None:
        self.services = services
        self.secure = secure_cookie(services.config)
        self.origins = allowed_origins(services.config)

    def guard(self, req: falcon.Request, resp: falcon.Response) -> None:
        cors(req, resp, self.origins)
        if not origin_allowed(req, self.origins):
            raise errors.ApiError(403, "FORBIDDEN", "origin not allowed")


class Login(_SessionRoute):
    def __init__(self, services) -> None:
        super().__init__(services)
        self.argon2 = asyncio.Semaphore(services.config.dashboard_login_concurrency)

    async def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.guard(req, resp)
        body = await _login_input(req)
        email, ip, call = body.email.lower(), self.services.addresses.limit_key(req), self.services.db.call
        ttl = self.services.config.dashboard_session_ttl
        device = self.device(req, email)
        found = await call(db.ANON, None, "dashboard.login_user", email, ip, *device)
        user = orjson.loads(found) if found else None
        if user and "error" in user:  # this (e-mail, address), this address or the account: no attempt left
            retry_after = int(user.get("retryAfter", 60))
            # No e-mail in a log line (issue 39): the account is named in the database's counters
            # and, past the account-wide ceiling, in its audit row (docs/security.md).
            log.warning("dashboard_login_locked_out", ip=ip, retry_after=retry_after)
            raise errors.rate_limited("RATE_LIMITED", "too many failed logins, try again later", retry_after,
                                      user.get("limit") or LOGIN_FAILURES_PER_ADDRESS)
        # The attempt is already counted (login_user reserved it). An unknown e-mail costs the
        # same hash verification as a wrong password; at most DASHBOARD_LOGIN_CONCURRENCY
        # verifications (7 MiB each, app/dashboard/passwords.py) run at once in this process,
        # the rest wait their turn.
        async with self.argon2:
            verified = await asyncio.to_thread(_verify, user["passwordHash"] if user else _dummy_hash(),
                                               body.password)
        if not (user and verified):
            log.info("dashboard_login_failed", user_id=user and user.get("userId"), ip=ip, known_user=user is not None)
            raise errors.ApiError(401, "INVALID_CREDENTIALS", "invalid e-mail or password")
        if user.get("active") is False:
            # Said only to who knows the password: a stranger learns nothing of the account.
            log.info("dashboard_login_disabled", user_id=user["userId"], ip=ip)
            raise errors.ApiError(403, "ACCOUNT_DISABLED",
                                  "this account is disabled; ask an administrator to enable it")
        token = secrets.token_urlsafe(32)
        session = orjson.loads(await call(
            db.ANON, None, "dashboard.login_succeeded", email, user["passwordHash"], token_hash(token),
            ttl, ip, req.user_agent, *device))
        log.info("dashboard_login", user_id=session["userId"], ip=ip)
        resp.set_cookie(SESSION_COOKIE, token, max_age=ttl, path="/", secure=self.secure,
                        http_only=True, same_site="Lax")
        devices = self.services.operator_devices
        resp.set_cookie(DEVICE_COOKIE, devices.issue(session["email"], uid=session["userId"],
                                                     gen=session["deviceGeneration"]),
                        max_age=devices.lifetime, path=DEVICE_COOKIE_PATH, secure=self.secure,
                        http_only=True, same_site="Lax")
        send(resp, {"user": {"id": session["userId"], "email": session["email"]},
                    "expiresAt": session["expiresAt"]})


    def device(self, req: falcon.Request, email: str) -> tuple[int | None, int | None]:
        """(user id, device generation) of the request's `device` cookie when it is a valid one
        of this e-mail's account, else (None, None); the database compares the generation."""
        claims = self.services.operator_devices.claims(
            next(iter(req.get_cookie_values(DEVICE_COOKIE) or ()), None), email)
        if claims is None or not all(type(claims.get(k)) is int for k in ("uid", "gen")):
            return None, None
        return claims["uid"], claims["gen"]


class Logout(_SessionRoute):
    async def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.guard(req, resp)
        token = cookie_token(req)
        revoked = False
        if token is not None:
            revoked = await self.services.db.call(db.ANON, None, "dashboard.logout", token_hash(token))
        resp.unset_cookie(SESSION_COOKIE, path="/", same_site="Lax")
        send(resp, {"revoked": bool(revoked)})
