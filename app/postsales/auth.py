"""POST /auth/otp/request and POST /auth/otp/verify: the holder's e-mail login.

Python draws the 6-digit code (CSPRNG) and its keyed hash, HMAC-SHA256(OTP_HASH_SECRET,
email + ":" + code); SQL (postsales.request_otp / verify_otp) keeps only the hash and holds
every rule: holder check, cooldown, hourly cap, expiry, single use, attempts, and the limits
per client IP (POSTSALES_OTP_IP_PER_HOUR requests, POSTSALES_VERIFY_IP_PER_HOUR failed
verifications; the client by app/addresses.py's one rule: X-Forwarded-For only from a proxy
listed in FORWARDED_ALLOW_IPS, an IPv6 client keyed on its /64). The request
answers alike for known and unknown e-mails; the mail goes out in the background.

A verified code also gives the holder's app a device token (`device_token`, app/tokens.py
DeviceTokens), which it sends back as `X-Device-Token` on both routes: a request with a valid
one for its e-mail is exempt from the e-mail's ceilings (20 codes, 50 failed verifications an
hour from all addresses), so that many addresses cannot lock the holder out (docs/security.md).
"""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from typing import Any

import falcon
import orjson

from app import validation
from app.db import ANON
from app.errors import ApiError
from app.responses import send

# Outcomes of the SQL functions -> (status, message).
OTP_ERRORS = {
    "OTP_INVALID": (401, "invalid code"),
    "OTP_EXPIRED": (401, "code expired; request a new one"),
    "OTP_ATTEMPTS_EXHAUSTED": (429, "too many failed attempts; request a new code"),
    "OTP_COOLDOWN": (429, "a code was sent less than a minute ago; wait before asking again"),
    "OTP_RATE_LIMITED": (429, "too many codes requested for this e-mail; try again later"),
    "OTP_IP_RATE_LIMITED": (429, "too many attempts from this address; try again later"),
}


OTP = re.compile(r"^[0-9]{6}$")


async def login_body(req: falcon.Request, *names: str) -> dict[str, str]:
    """The anonymous login body (capped at ANONYMOUS_BODY_BYTES): exactly these fields, a valid
    e-mail (lower-cased) and, when asked for, a 6-digit code; else 400 with every bad field."""
    body = await validation.json_object(req, validation.ANONYMOUS_BODY_BYTES)
    problems = [{"field": k, "message": "unknown field"} for k in body.keys() - set(names)]
    for name in names:
        try:
            if name == "email":
                body["email"] = validation.email(body.get("email"))
            elif not isinstance(body.get(name), str) or not OTP.fullmatch(body[name]):
                raise validation.invalid(name, "is required" if body.get(name) is None else "must be 6 digits")
        except ApiError as exc:
            problems += exc.details
    if problems:
        raise ApiError(400, "VALIDATION_ERROR", "request body failed validation", problems)
    return body


DEVICE_HEADER = "X-Device-Token"


def otp_hash(secret: bytes, email: str, code: str) -> bytes:
    return hmac.new(secret, f"{email}:{code}".encode(), hashlib.sha256).digest()


def otp_error(outcome: dict[str, Any]) -> ApiError:
    status, message = OTP_ERRORS[outcome["error"]]
    retry_after = outcome.get("retry_after")
    if retry_after is None:
        return ApiError(status, outcome["error"], message)
    return ApiError(status, outcome["error"], message, {"retry_after": retry_after},
                    headers={"Retry-After": str(retry_after)})


class OtpRequest:
    def __init__(self, services) -> None:
        self.db = services.db
        self.mailer = services.mailer
        self.secret = services.config.secret("OTP_HASH_SECRET").encode()
        self.ttl = services.config.postsales_otp_ttl
        self.ip_limit = services.config.postsales_otp_ip_per_hour
        self.addresses = services.addresses
        self.devices = services.holder_devices

    async def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        email = (await login_body(req, "email"))["email"]
        code = f"{secrets.randbelow(1_000_000):06d}"
        device = self.devices.claims(req.get_header(DEVICE_HEADER), email) is not None
        outcome = orjson.loads(await self.db.call(
            ANON, None, "postsales.request_otp", email, otp_hash(self.secret, email, code), self.ttl,
            self.addresses.limit_key(req), self.ip_limit, device))
        if "error" in outcome:
            raise otp_error(outcome)
        if outcome["send"]:
            self.mailer.send_otp_later(email, code, self.ttl)
        send(resp, {"message": "If this e-mail holds active policies, a code has been sent to it.",
                    "expires_in": self.ttl})  # 200: the specification's success codes are 200 and 201


class OtpVerify:
    def __init__(self, services) -> None:
        self.db = services.db
        self.tokens = services.postsales_tokens
        self.secret = services.config.secret("OTP_HASH_SECRET").encode()
        self.max_attempts = services.config.postsales_otp_max_attempts
        self.ip_limit = services.config.postsales_verify_ip_per_hour
        self.addresses = services.addresses
        self.devices = services.holder_devices

    async def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = await login_body(req, "email", "otp")
        email = body["email"]
        device = self.devices.claims(req.get_header(DEVICE_HEADER), email) is not None
        outcome = orjson.loads(await self.db.call(
            ANON, None, "postsales.verify_otp", email, otp_hash(self.secret, email, body["otp"]),
            self.max_attempts, self.addresses.limit_key(req), self.ip_limit, device))
        if "error" in outcome:
            raise otp_error(outcome)
        token = self.tokens.issue(email, email=email)
        send(resp, {"access_token": token, "token_type": "Bearer", "expires_in": self.tokens.lifetime,
                    "device_token": self.devices.issue(email), "device_token_expires_in": self.devices.lifetime})
