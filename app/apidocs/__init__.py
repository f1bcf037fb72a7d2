"""GET /docs: the API reference a person reads, Swagger UI (npm `swagger-ui-dist`, pinned in
package.json beside this module) over the partner and holder documents, and the internal one
where the internal documents are served (development, or a client in METRICS_ALLOWED_IPS).

Nothing is loaded from elsewhere: the page, its script and its style come from this app
(`/docs/assets/...`, an allow-list of files of node_modules/swagger-ui-dist and viewer.js), and
the page's Content-Security-Policy lets the browser fetch nothing else. The files reach
node_modules by `scripts/api-viewer.sh` (run by `make setup`) or by the Dockerfile's viewer
stage; without them /docs answers 503 saying so.
"""
from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Callable

import falcon
import orjson

from app.errors import ApiError

HERE = Path(__file__).resolve().parent
DIST = HERE / "node_modules" / "swagger-ui-dist"
ASSETS = {  # name -> (file, content type)
    "swagger-ui.css": (DIST / "swagger-ui.css", "text/css; charset=utf-8"),
    "swagger-ui-bundle.js": (DIST / "swagger-ui-bundle.js", "text/javascript; charset=utf-8"),
    "swagger-ui-standalone-preset.js": (DIST / "swagger-ui-standalone-preset.js", "text/javascript; charset=utf-8"),
    "viewer.js": (HERE / "viewer.js", "text/javascript; charset=utf-8"),
    "favicon-32x32.png": (DIST / "favicon-32x32.png", "image/png"),  # else the browser asks /favicon.ico
}
PUBLIC = [{"name": "partner", "url": "/openapi/partner.json"}, {"name": "holder", "url": "/openapi/holder.json"}]
INTERNAL = {"name": "internal", "url": "/openapi/internal.json"}
# Swagger UI styles elements from its script and draws icons from data: URIs; everything else
# is this origin's.
POLICY = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
          "connect-src 'self'; font-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Insurance back-end: API reference</title>
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui" data-documents="{documents}"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/swagger-ui-standalone-preset.js"></script>
<script src="/docs/assets/viewer.js"></script>
</body>
</html>
"""


def installed() -> bool:
    return all(path.is_file() for path, _ in ASSETS.values())


def _missing() -> ApiError:
    return ApiError(503, "SERVICE_UNAVAILABLE",
                    "the API viewer is not installed: run scripts/api-viewer.sh (make setup does); "
                    "the documents are at /openapi/partner.json and /openapi/holder.json")


class Reference:
    """GET /docs: the viewer's page, listing the documents this client may read."""

    def __init__(self, internal_allowed: Callable[[falcon.Request], bool] | None) -> None:
        self.internal_allowed = internal_allowed  # None: everyone (development), as /openapi/internal.json

    def documents(self, req: falcon.Request) -> list[dict[str, str]]:
        internal = self.internal_allowed is None or self.internal_allowed(req)
        return PUBLIC + [INTERNAL] if internal else PUBLIC

    async def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        if not installed():
            raise _missing()
        resp.data = PAGE.format(documents=escape(orjson.dumps(self.documents(req)).decode())).encode()
        resp.content_type = falcon.MEDIA_HTML
        resp.set_header("Content-Security-Policy", POLICY)
        resp.set_header("Cache-Control", "no-store")


class Asset:
    """GET /docs/assets/{name}: one file of the allow-list, nothing else of the disk."""

    def __init__(self) -> None:
        self.cache: dict[str, bytes] = {}

    async def on_get(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        if name not in ASSETS:
            raise falcon.HTTPNotFound()
        path, content_type = ASSETS[name]
        if name not in self.cache:
            if not path.is_file():
                raise _missing()
            self.cache[name] = path.read_bytes()
        resp.data = self.cache[name]
        resp.content_type = content_type
        resp.set_header("Cache-Control", "public, max-age=3600")
        resp.set_header("X-Content-Type-Options", "nosniff")
