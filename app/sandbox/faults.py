"""The fault switches: what a test or a demo asks the sandbox to do wrong, per provider.

    POST /_sandbox/faults {"provider": "PROVIDER_A", "count": 2, "status": 503, "retryAfter": 7}

A fault names one provider (an insurer's slug, an identity provider, CHAT) and fires on its
next `count` requests, whatever insurer it is: the switches are the same for every
description the sandbox serves.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any


class Invalid(Exception):
    """A request the sandbox refuses; the message is the 400 reason."""


FAULT_KINDS = ("status", "timeout", "delay", "malformed", "expiredToken", "revokedToken", "trickle", "reset",
               "expiresIn")
MAX_FAULT_BODY = 64 * 1024 * 1024


@dataclasses.dataclass
class Fault:
    provider: str
    count: int
    status: int | None = None
    retry_after: int | str | None = None
    body: bytes | None = None
    timeout: float | None = None
    delay: float | None = None
    trickle: float | None = None
    expires_in: float | None = None   # an identity provider's next tokens live this long
    reset: bool = False
    malformed: bool = False
    expired_token: bool = False
    revoked_token: bool = False

    def as_json(self) -> dict[str, Any]:
        out = {"provider": self.provider, "count": self.count, "status": self.status,
               "retryAfter": self.retry_after, "bodyBytes": None if self.body is None else len(self.body),
               "timeout": self.timeout, "delay": self.delay, "trickle": self.trickle, "expiresIn": self.expires_in,
               "reset": self.reset, "malformed": self.malformed, "expiredToken": self.expired_token,
               "revokedToken": self.revoked_token}
        return {k: v for k, v in out.items() if v not in (None, False)}

    @classmethod
    def from_json(cls, data: Any, providers: Iterable[str]) -> Fault:
        if not isinstance(data, dict):
            raise Invalid("body must be a JSON object")
        provider = data.get("provider")
        providers = tuple(providers)
        if provider not in providers:
            raise Invalid(f"provider must be one of {', '.join(providers)}")
        count = data.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise Invalid("count must be an integer >= 1")
        kinds = [k for k in FAULT_KINDS if data.get(k) not in (None, False)]
        if data.get("body") is not None and not kinds:
            kinds = ["status"]  # a raw body alone: answered with 200
            data = {**data, "status": 200}
        if data.get("body") is not None and kinds != ["status"]:
            raise Invalid("body goes with status only")
        if len(kinds) != 1:
            raise Invalid(f"give exactly one of {', '.join(FAULT_KINDS)}")
        fault = cls(provider, count)
        kind = kinds[0]
        value = data[kind]
        if kind == "status":
            low = 200 if data.get("body") is not None else 400
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 599:
                raise Invalid(f"status must be an HTTP status {low}-599")
            fault.status = value
            retry_after = data.get("retryAfter")
            if retry_after is not None:
                if isinstance(retry_after, str):
                    if not 0 < len(retry_after) <= 200 or any(c in retry_after for c in "\r\n\0"):
                        raise Invalid("retryAfter text must be one header line of at most 200 characters")
                elif isinstance(retry_after, bool) or not isinstance(retry_after, int) or retry_after < 0:
                    raise Invalid("retryAfter must be a whole number of seconds or an HTTP-date")
                fault.retry_after = retry_after
            body = data.get("body")
            if body is not None:
                if not isinstance(body, str) or len(body) > MAX_FAULT_BODY:
                    raise Invalid("body must be a string of at most 64 MiB")
                fault.body = body.encode("utf-8", "surrogatepass")
        elif kind in ("timeout", "delay", "trickle", "expiresIn"):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 300:
                raise Invalid(f"{kind} must be a number of seconds in (0, 300]")
            setattr(fault, "expires_in" if kind == "expiresIn" else kind, float(value))
        elif value is not True:
            raise Invalid(f"{kind} must be true")
        else:
            setattr(fault, {"expiredToken": "expired_token", "revokedToken": "revoked_token"}.get(kind, kind), True)
        return fault
