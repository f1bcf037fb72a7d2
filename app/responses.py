"""Success answers in the envelope `{"success": true, "data": ...}`.

JSON is encoded one way on every route: orjson's compact form (`{"id":1,"state":"SUCCESS"}`),
whether Python built the value (`send`) or a SQL function built it as text (`send_raw`). SQL's
own text differs by type (`json` prints `"id" : 1`, `jsonb` `"id": 1`), so `send_raw` encodes
it again (measured by `bench/json_encoding.py`: a few microseconds for a ten-item list).
"""
from __future__ import annotations

from typing import Any

import falcon
import orjson

_HEAD = b'{"success":true,"data":'


def compact(data_json: str | bytes) -> bytes:
    """SQL-built JSON text in the one encoding of the API. Text orjson cannot read back (an
    integer beyond 64 bits that reached a jsonb document) passes through as it is."""
    try:
        return orjson.dumps(orjson.loads(data_json))
    except orjson.JSONDecodeError:
        return data_json.encode() if isinstance(data_json, str) else data_json


def send_raw(resp: falcon.Response, data_json: str | bytes | None, status: int = 200) -> None:
    resp.status = status
    resp.content_type = falcon.MEDIA_JSON
    resp.data = _HEAD + (b"null" if data_json is None else compact(data_json)) + b"}"


def send(resp: falcon.Response, data: Any, status: int = 200) -> None:
    resp.status = status
    resp.content_type = falcon.MEDIA_JSON
    resp.data = _HEAD + orjson.dumps(data) + b"}"
