"""The OpenAPI document: one YAML file per surface beside this module, merged at start-up.

`core.yaml` holds `info`, the shared components (the envelope, errors) and the health
routes; each surface's file adds its `paths` and `components`. Served at GET /openapi.json.
"""
from __future__ import annotations

from pathlib import Path

import falcon
import orjson

HERE = Path(__file__).resolve().parent


def load() -> dict:
    import yaml  # only when the document is first asked for: a serving process rarely is

    document = yaml.safe_load((HERE / "core.yaml").read_text())
    for path in sorted(HERE.glob("*.yaml")):
        if path.name == "core.yaml":
            continue
        part = yaml.safe_load(path.read_text()) or {}
        document.setdefault("paths", {}).update(part.get("paths", {}))
        for kind, items in part.get("components", {}).items():
            document.setdefault("components", {}).setdefault(kind, {}).update(items)
        document.setdefault("tags", []).extend(part.get("tags", []))
    # Every body is read by app/validation.py: its 413 and 415 hold for each route that takes one.
    for item in document.get("paths", {}).values():
        for operation in item.values():
            if isinstance(operation, dict) and "requestBody" in operation:
                responses = operation.setdefault("responses", {})
                responses.setdefault("413", {"$ref": "#/components/responses/PayloadTooLarge"})
                responses.setdefault("415", {"$ref": "#/components/responses/UnsupportedMediaType"})
    return document


class OpenApi:
    def __init__(self) -> None:
        self.body: bytes | None = None

    async def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        if self.body is None:
            self.body = orjson.dumps(load())
        resp.data = self.body
        resp.content_type = falcon.MEDIA_JSON
