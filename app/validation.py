"""Input rules every surface shares: one JSON body reader, ids, integers and text at the edge.

A body is read only by a responder, after its credential check, and never past its cap:
`MAX_BODY_BYTES` (default 1 MiB) on authenticated routes, `ANONYMOUS_BODY_BYTES` (16 KiB) on
the anonymous ones. Codes, one per failure (docs/api.md):

    413 PAYLOAD_TOO_LARGE       over the cap, from Content-Length or counted while reading
    415 UNSUPPORTED_MEDIA_TYPE  a body that is not application/json
    400 MALFORMED_JSON          not JSON (or not UTF-8)
    400 VALIDATION_ERROR        JSON that breaks a rule here, details [{field, message}]:
                                nested deeper than MAX_JSON_DEPTH (checked on the raw bytes,
                                before any parser runs), not an object, a NUL character or an
                                unpaired surrogate in a
                                string, an integer outside bigint, an id or number parameter
                                that is not ASCII digits, a text parameter out of bounds

PostgreSQL refuses NUL in text and jsonb and asyncpg refuses integers beyond bigint; both would
otherwise surface as data exceptions deep in a call (app/errors.py answers those 400 as well).
A body nested too deep would be stored and then fail later, wherever it is written out again
(orjson.dumps stops at 255 levels: a 254-level insured_subject was stored, then its answer was
a 500).
"""
from __future__ import annotations

import json
import re
import uuid
from typing import TYPE_CHECKING, Any

import orjson

from app.errors import ApiError

if TYPE_CHECKING:
    import falcon

MIN_BIGINT, MAX_BIGINT = -2**63, 2**63 - 1
ANONYMOUS_BODY_BYTES = 16 * 1024
# The e-mail rule for early answers; the database's own is the DOMAIN insurance.email.
EMAIL = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"
EMAIL_MAX_LENGTH = 254
EMAIL_PATTERN = re.compile(EMAIL)

_INTEGER = re.compile(r"-?[0-9]{1,20}")
# A JSON number of 19 digits or more (or a \u escape of NUL or a surrogate) may need the slow
# path: orjson turns integers beyond 64 bits into floats and refuses lone surrogates.
_SUSPECT = re.compile(rb"[0-9]{19}")

# How deep a JSON body may nest (an object or array counts one level; the body itself is level
# 1). Stored values are written out again inside other documents (the read model, the answer's
# envelope, the emission's payload), so the limit leaves ample room under orjson's 255; 64 is
# also System.Text.Json's default. No partner document comes near it.
MAX_JSON_DEPTH = 64
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_SQUARE = bytes.maketrans(b"{}", b"[]")  # one kind of bracket: JSON that parses pairs them right


def invalid(field: str, message: str) -> ApiError:
    """400 VALIDATION_ERROR naming one field (a name that is itself bad input is escaped)."""
    field = field.replace("\x00", "\\u0000").encode("utf-8", "backslashreplace").decode()
    return ApiError(400, "VALIDATION_ERROR", f"{field or 'body'} {message}",
                    [{"field": field, "message": message}])


def too_large(limit: int) -> ApiError:
    return ApiError(413, "PAYLOAD_TOO_LARGE", f"the body exceeds {limit} bytes", {"limit": limit})


# ---------------------------------------------------------------- bodies

async def read_body(req: falcon.Request, limit: int) -> bytes:
    """The raw body, at most `limit` bytes: 413 from Content-Length before anything is read, or
    as soon as a chunked body passes the limit (nothing beyond limit + 1 bytes is held)."""
    length = req.content_length
    if length is not None and length > limit:
        raise too_large(limit)
    data = await req.stream.read(limit + 1)
    if len(data) > limit:
        raise too_large(limit)
    return data


def nests_deeper(raw: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the JSON text `raw` nests objects and arrays more than `limit` deep, read from its
    bytes without parsing them: brackets inside strings do not count. Each pass drops the
    innermost (empty) pairs, one level; what is left after `limit` passes is deeper (or not JSON).
    Every step runs in C: 5 to 30 ms for 1 MiB of brackets here, and two counts (about 1 µs)
    for a body with at most `limit` opening brackets (nearly every body)."""
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    # Escapes go first (pairs of backslashes, then an escaped quote), so that every quote left
    # opens or closes a string: the text outside strings is every other piece between quotes.
    outside = b"".join(raw.replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')[::2])
    brackets = outside.translate(_SQUARE, _NOT_BRACKET)
    too_deep = b"[" * (limit + 1)
    for _ in range(limit):
        if not brackets or too_deep in brackets:
            break
        brackets = brackets.replace(b"[]", b"")
    return bool(brackets)


def check_depth(raw: bytes) -> None:
    """400 VALIDATION_ERROR when `raw` nests deeper than MAX_JSON_DEPTH."""
    if nests_deeper(raw):
        raise invalid("", f"nests deeper than {MAX_JSON_DEPTH} levels of objects and arrays")


def parse_json(raw: bytes) -> Any:
    """The JSON value of `raw`, checked by `check_depth` before it is parsed and by `check_value`
    after; 400 MALFORMED_JSON when it is not JSON."""
    check_depth(raw)
    try:
        value = orjson.loads(raw)
        slow = _SUSPECT.search(raw) is not None
    except orjson.JSONDecodeError as exc:
        if "surrogate" not in str(exc):
            raise ApiError(400, "MALFORMED_JSON", "the body is not valid JSON") from None
        slow = True
    if slow:  # Python's parser keeps big integers and lone surrogates, so check_value can name them
        try:
            value = json.loads(raw, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            raise ApiError(400, "MALFORMED_JSON", "the body is not valid JSON") from None
    check_value(value)
    return value


def _no_constant(name: str) -> None:
    raise ValueError(name)


def check_value(value: Any) -> None:
    """400 VALIDATION_ERROR for the first NUL, unpaired surrogate or integer beyond bigint.
    Iterative: orjson accepts nesting deeper than Python's recursion limit."""
    stack: list[tuple[Any, tuple]] = [(value, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            check_text(value, path)
        elif isinstance(value, dict):
            for key, item in value.items():
                check_text(key, path + (key,))
                stack.append((item, path + (key,)))
        elif isinstance(value, list):
            stack.extend((item, path + (i,)) for i, item in enumerate(value))
        elif isinstance(value, int) and not isinstance(value, bool) and not MIN_BIGINT <= value <= MAX_BIGINT:
            raise invalid(field_name(path), "is an integer outside the 64-bit range")


def field_name(path: tuple) -> str:
    """('beneficiaries', 0, 'email') -> 'beneficiaries[0].email'."""
    name = ""
    for part in path:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name


def check_text(text: str, field: str | tuple) -> str:
    """The text, unless it holds a NUL or an unpaired surrogate (neither can be stored)."""
    if "\x00" in text:
        raise invalid(field if isinstance(field, str) else field_name(field), "contains a NUL character")
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError:
            raise invalid(field if isinstance(field, str) else field_name(field),
                          "contains an unpaired surrogate") from None
    return text


async def read_json(req: falcon.Request, limit: int) -> Any:
    """The request's JSON body (any value), capped and checked. Call it after the credential check."""
    media_type = (req.content_type or "application/json").split(";", 1)[0].strip().lower()
    if media_type != "application/json":  # no Content-Type at all is read as JSON
        raise ApiError(415, "UNSUPPORTED_MEDIA_TYPE", "the body must be application/json")
    return parse_json(await read_body(req, limit))


async def json_object(req: falcon.Request, limit: int) -> dict[str, Any]:
    """The request's body as a JSON object (see read_json)."""
    body = await read_json(req, limit)
    if not isinstance(body, dict):
        raise invalid("", "must be a JSON object")
    return body


# ---------------------------------------------------------------- ids, parameters

def integer(raw: str | None, field: str) -> int | None:
    """An integer parameter in ASCII digits (str.isdigit() also accepts '²', which int() refuses)
    within bigint; None when absent. The route checks its own range, with its own code."""
    if raw is None:
        return None
    if not _INTEGER.fullmatch(raw):
        raise invalid(field, "must be an integer")
    value = int(raw)
    if not MIN_BIGINT <= value <= MAX_BIGINT:
        raise invalid(field, "is an integer outside the 64-bit range")
    return value


def path_id(raw: str, field: str) -> int:
    """A positive bigint id from a path segment: ASCII digits only."""
    if not raw.isascii() or not raw.isdigit() or len(raw) > 19 or not 0 < int(raw) <= MAX_BIGINT:
        raise invalid(field, "must be a positive integer id")
    return int(raw)


def item_ref(raw: str, field: str) -> tuple[int | None, uuid.UUID | None]:
    """A risk item named in the path by its integer id or its uid: (id, None) or (None, uid)."""
    if raw.isascii() and raw.isdigit():
        return path_id(raw, field), None
    try:
        return None, uuid.UUID(raw)
    except ValueError:
        raise invalid(field, "must be the item's uid or its integer id") from None


def positive_id(value: Any, field: str) -> int:
    """A positive bigint id from a JSON value: an integer, never a string or a boolean."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_BIGINT:
        raise invalid(field, "must be a positive integer id")
    return value


def id_and_uid(raw_id: Any, raw_uid: Any, id_field: str, uid_field: str) -> tuple[int | None, uuid.UUID | None]:
    """A risk item named in a JSON body by its integer id, its uid, or both (the SQL checks that
    both name the same item): (id or None, uid or None), each well formed when given."""
    item_id = item_uid = None
    if raw_id is not None:
        item_id = positive_id(raw_id, id_field)
    if raw_uid is not None:
        try:
            item_uid = uuid.UUID(raw_uid) if isinstance(raw_uid, str) else None
        except ValueError:
            pass
        if item_uid is None:
            raise invalid(uid_field, "must be the item's UUID")
    return item_id, item_uid


def text_param(req: falcon.Request, name: str, max_length: int, min_length: int = 1) -> str | None:
    """A query parameter of text: no NUL, no unpaired surrogate, min..max characters."""
    raw = req.get_param(name)
    if raw is None:
        return None
    check_text(raw, name)
    if not min_length <= len(raw) <= max_length:
        raise invalid(name, f"must have {min_length} to {max_length} characters")
    return raw


def email(value: Any, field: str = "email") -> str:
    """An e-mail address by the shared rule, lower-cased (what the database stores)."""
    if not isinstance(value, str):
        raise invalid(field, "is required" if value is None else "must be a string")
    check_text(value, field)
    if len(value) > EMAIL_MAX_LENGTH or not EMAIL_PATTERN.fullmatch(value):
        raise invalid(field, "must be an e-mail address")
    return value.lower()
