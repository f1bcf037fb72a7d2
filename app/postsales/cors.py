"""CORS for the post-sales surface only: the holder web app's origins, preflight included.

Falcon's CORSMiddleware answers preflights from each route's `Allow` header; this subclass
limits it to the surface's prefixes (`/api/postsales/v1`, `/api/integrations/post-sales`) and
marks those answers `Vary: Origin`. Other origins and
other surfaces get no CORS headers at all.
"""
from __future__ import annotations

import falcon

EXPOSED = ("Retry-After", "X-Request-Id")


class PostsalesCors(falcon.CORSMiddleware):
    def __init__(self, prefixes: tuple[str, ...], origins: tuple[str, ...]) -> None:
        super().__init__(allow_origins=frozenset(origins), expose_headers=list(EXPOSED))
        self.prefixes = prefixes

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         req_succeeded: bool) -> None:
        if not req.path.startswith(self.prefixes):
            return
        resp.append_header("Vary", "Origin")
        super().process_response(req, resp, resource, req_succeeded)
