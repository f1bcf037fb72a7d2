"""Success answers in the envelope `{"success": true, "data": ...}`.

SQL functions usually return the data already as JSON text; `send_raw` wraps it without a
decode/encode round trip. `send` serializes a Python value.
"""
from __future__ import annotations

from typing import Any

import falcon
import orjson

_HEAD = b'{"success":true,"data":'


def send_raw(resp: falcon.Response, data_json: str | bytes | None, status: int = 200) -> None:
    if data_json is None:
        data_json = b"null"
    elif isinstance(data_json, str):
        data_json = data_json.encode()
    resp.status = status
    resp.content_type = falcon.MEDIA_JSON
    resp.data = _HEAD + data_json + b"}"


def send(resp: falcon.Response, data: Any, status: int = 200) -> None:
    send_raw(resp, orjson.dumps(data), status)
