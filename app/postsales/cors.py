"""CORS for the post-sales surface only: the holder web app's origins, preflight included.

Falcon's CORSMiddleware answers preflights from each route's `Allow` header; this subclass
limits it to the surface's prefixes (`/api/postsales/v1`, `/api/integrations/post-sales`) and
marks those answers `Vary: Origin`. Other origins and other surfaces get no CORS headers at all.
A refused origin is logged once per process (a browser shows the holder app only an opaque
network error), naming the setting that would allow it.
"""
from __future__ import annotations

import falcon
import structlog

EXPOSED = ("Retry-After", "X-Request-Id")
_REMEMBERED = 256  # refused origins logged per process; beyond, a flood is not logged again

log = structlog.get_logger("app.cors")


class PostsalesCors(falcon.CORSMiddleware):
    def __init__(self, prefixes: tuple[str, ...], origins: tuple[str, ...]) -> None:
        super().__init__(allow_origins=frozenset(origins), expose_headers=list(EXPOSED))
        self.prefixes = prefixes
        self.origins = frozenset(origins)
        self.refused: set[str] = set()

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         req_succeeded: bool) -> None:
        if not req.path.startswith(self.prefixes):
            return
        resp.append_header("Vary", "Origin")
        origin = req.get_header("Origin")
        if origin and origin not in self.origins and origin not in self.refused and len(self.refused) < _REMEMBERED:
            self.refused.add(origin)
            log.warning("cors_origin_refused", origin=origin[:200], setting="POSTSALES_ALLOWED_ORIGINS",
                        allowed=sorted(self.origins),
                        hint=f"add {origin[:200]!r} to POSTSALES_ALLOWED_ORIGINS (environment or .env.development) to let its pages call the holder API")
        super().process_response(req, resp, resource, req_succeeded)
