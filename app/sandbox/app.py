"""The sandbox HTTP app (Falcon ASGI): strict provider doubles, records, injectable faults.

Provider routes (what the adapters call), one set per insurer described beside its adapter
(app/orchestrator/insurers/*.sandbox.json, read by descriptions.py), for example:
    POST /provider-a/v1/{variant}/policies   X-Api-Key             -> 201 {"policyNumber"}
    POST /provider-b/api/v2/emissions        Bearer <agent key>    -> 201 {"emission": {"certificateNumber"}}
    POST /idp/oauth/token                    client credentials    -> 200 {"access_token", "expires_in"}
    POST /mail/v1/messages                   Bearer <idp token>    -> 202 {"messageId"}
    POST /provider-c/oauth2/token            client credentials    -> 200 {"access_token", "expires_in"}
    POST /provider-c/v1/policies             Bearer <token>        -> 201 {"data": {"policy": {"id"}}}
    POST /chat/webhook                       Slack-compatible JSON -> 200 "ok"
Every insurer call must carry an Idempotency-Key; the same key gets the same answer (and the
same policy number) back.

Control routes (for tests and demos), control.py:
    GET    /_sandbox/health
    GET    /_sandbox/requests?provider=PROVIDER_A&limit=100   what was received, newest last
                                          (`replayed`: answered from the key's first answer;
                                          `issued`: a new policy or message, answered or not)
    GET    /_sandbox/stats                distinct policies (per insurer), messages, tokens issued
                                          (in all, and per identity provider), requests per provider,
                                          maxInFlightPerKey (the most concurrent requests seen for
                                          one Idempotency-Key, per provider)
    POST   /_sandbox/faults  {"provider": "PROVIDER_A", "count": 2, "status": 503, "retryAfter": 7}
           retryAfter: seconds or any header text (an HTTP-date); "body": raw text answered with
           the status (default 200; NUL, HTML or megabytes welcome); or one of "timeout": s,
           "delay": s, "malformed": true, "expiredToken": true, "revokedToken": true (the
           insurer's tokens are forgotten and the call refused as its description says),
           "trickle": s (a normal answer, one byte at a time over s seconds), "reset": true (the
           connection closed, no answer), "expiresIn": s (an identity provider's next tokens
           live s seconds). faults.py
    GET    /_sandbox/faults;  DELETE /_sandbox/faults (all, or ?provider=...)
    GET    /_sandbox/mail?to=EMAIL        mail caught by the SMTP server (SANDBOX_SMTP_PORT): to,
                                          subject, text, newest last (mail.py)
    DELETE /_sandbox/tokens?provider=IDP  every token of that identity provider (or of all) expires now
    POST   /_sandbox/reset                forget requests, faults, policies, messages and webhooks
Partner webhook receivers under /_sandbox/webhooks: webhooks.py.
State lives in memory (state.py); answers are immediate unless a fault says otherwise. A
request stops counting as in flight when its answer is sent or its client hangs up (asgi.py).
"""
from __future__ import annotations

import functools

import falcon
import falcon.asgi
import orjson

from app.sandbox.asgi import SandboxASGI
from app.sandbox.control import Control
from app.sandbox.descriptions import descriptions
from app.sandbox.mail import MailCatcher, MailLifespan
from app.sandbox.providers import ProviderRoute, Providers, token_record
from app.sandbox.state import State
from app.sandbox.webhooks import WebhookReceivers


def create_sandbox(smtp_port: int = 0, smtp_host: str = "127.0.0.1") -> SandboxASGI:
    """The sandbox app; with smtp_port, its mail catcher listens there while the app runs."""
    state, insurers, mailbox, webhooks = State(), descriptions(), MailCatcher(), WebhookReceivers()
    providers = Providers(state, insurers)
    app = falcon.asgi.App(middleware=[MailLifespan(mailbox, smtp_host, smtp_port)])
    handler = falcon.media.JSONHandler(dumps=orjson.dumps, loads=orjson.loads)
    app.req_options.media_handlers[falcon.MEDIA_JSON] = handler
    app.resp_options.media_handlers[falcon.MEDIA_JSON] = handler
    for insurer in insurers:
        for route in insurer.routes:
            app.add_route(route.path, ProviderRoute(providers, insurer.slug,
                                                    functools.partial(providers.insurer, insurer, route)))
    token_paths = {d.auth["tokenPath"]: d.identity_provider for d in insurers if d.identity_provider}
    for path, name in token_paths.items():
        app.add_route(path, ProviderRoute(providers, name, functools.partial(providers.token, name), token_record))
    app.add_route("/chat/webhook", ProviderRoute(providers, "CHAT", providers.chat))
    app.add_route("/_sandbox/webhooks", webhooks)
    app.add_route("/_sandbox/webhooks/{name}", webhooks, suffix="one")
    control = Control(providers, webhooks, mailbox)
    for name in ("health", "requests", "stats", "faults", "tokens", "reset", "mail"):
        app.add_route(f"/_sandbox/{name}", control, suffix=name)
    return SandboxASGI(app, state)
