"""One way to authenticate: a `falcon.before` hook per credential kind.

A hook verifies the request's credential and puts the identity on `req.context.identity`
(an app.db.Identity: the surface role and the claims SQL reads); the responder then calls
`db.call_as(req.context.identity, "schema.function", ...)`. A resource names the credential
it accepts in one attribute, `credential`, set from the services when it is built:

    @falcon.before(bearer)
    class MyRiskItems:
        def __init__(self, services):
            self.db, self.credential = services.db, services.postsales_tokens

Credentials are checked before a body is read. The dashboard's session cookie has its hook
beside the session (app/dashboard/auth.py `session`); the tRPC route answers in its own
envelope, so it asks for the same identity itself instead of through the hook.
"""
from __future__ import annotations

from typing import Any

import falcon

from app.errors import ApiError


async def bearer(req: falcon.Request, resp: falcon.Response, resource: Any, params: dict) -> None:
    """`Authorization: Bearer <JWT>` of the resource's TokenService (post-sales holder, gateway
    branch, service role): 400 MISSING_BEARER_TOKEN, 401 INVALID_TOKEN or TOKEN_EXPIRED."""
    authorization = req.get_header("Authorization")
    if authorization is None and resource.credential.authorize_path and req.get_header("x-api-key"):
        raise ApiError(400, "MISSING_BEARER_TOKEN", "Missing bearer token", details={
            "hint": f"an x-api-key is exchanged for a token at GET {resource.credential.authorize_path}; "
                    "send that token here as Authorization: Bearer <token>",
            "authorize": resource.credential.authorize_path})
    req.context.identity = resource.credential.verify_header(authorization)
