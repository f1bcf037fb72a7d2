"""Input checks of the post-sales routes: malformed input is a 400 VALIDATION_ERROR.

Field rules of risk items and beneficiaries (what a holder may change) live in SQL.
"""
from __future__ import annotations

import re
import uuid
from typing import Any

import falcon

from app.errors import bad_request

EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
OTP = re.compile(r"^[0-9]{6}$")
MAX_ID = 2**63 - 1


def path_id(name: str, raw: str) -> int:
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 19 or not 0 < int(raw) <= MAX_ID:
        raise bad_request(f"{name} must be a positive integer", details={name: "not a valid id"})
    return int(raw)


def path_item(name: str, raw: str) -> tuple[int | None, uuid.UUID | None]:
    """A risk item named in the path by its integer id or by its uid: (id, None) or (None, uid)."""
    if raw.isascii() and raw.isdigit():
        return path_id(name, raw), None
    try:
        return None, uuid.UUID(raw)
    except ValueError:
        raise bad_request(f"{name} must be the item's uid or its integer id",
                          details={name: "not a valid id or uid"}) from None


async def json_object(req: falcon.Request) -> dict[str, Any]:
    try:
        body = await req.get_media()
    except (falcon.MediaNotFoundError, falcon.MediaMalformedError):
        raise bad_request("the body must be a JSON object") from None
    if not isinstance(body, dict):
        raise bad_request("the body must be a JSON object")
    return body


async def string_fields(req: falcon.Request, fields: dict[str, re.Pattern]) -> dict[str, str]:
    """A JSON object with exactly these string fields, each matching its pattern, or 400."""
    body = await json_object(req)
    errors = {name: "unknown field" for name in body.keys() - fields.keys()}
    for name, pattern in fields.items():
        value = body.get(name)
        if not isinstance(value, str) or len(value) > 254 or not pattern.match(value):
            errors[name] = "required" if value is None else f"not a valid {name}"
    if errors:
        raise bad_request("request body failed validation", details=errors)
    return body
