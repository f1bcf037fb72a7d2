"""The control routes under /_sandbox/ (tests and demos): health, records, stats, faults, reset, mail."""
from __future__ import annotations

import orjson

from app.sandbox.faults import Fault, Invalid
from app.sandbox.mail import MailCatcher
from app.sandbox.providers import Providers
from app.sandbox.webhooks import WebhookReceivers


class Control:
    def __init__(self, providers: Providers, webhooks: WebhookReceivers, mailbox: MailCatcher) -> None:
        self.providers, self.state, self.webhooks, self.mailbox = providers, providers.state, webhooks, mailbox

    async def on_get_health(self, req, resp) -> None:
        resp.media = {"status": "ok"}

    async def on_get_requests(self, req, resp) -> None:
        provider = req.get_param("provider")
        limit = req.get_param_as_int("limit", min_value=1) or 1000
        rows = [r for r in self.state.records if provider is None or r["provider"] == provider]
        resp.media = {"total": len(rows), "requests": rows[-limit:]}

    async def on_get_stats(self, req, resp) -> None:
        state, insurers = self.state, self.providers.insurers.values()
        names = self.providers.names
        resp.media = {"policies": {d.slug: len(state.issued.get(d.slug, {})) for d in insurers if d.issues == "policies"},
                      "messages": sum(len(state.issued.get(d.slug, {})) for d in insurers if d.issues == "messages"),
                      "tokensIssued": sum(state.tokens_issued.values()),
                      "tokens": {name: state.tokens_issued.get(name, 0) for name in self.providers.identity},
                      "requests": {p: state.requests.get(p, 0) for p in names},
                      "maxInFlightPerKey": {p: state.max_in_flight.get(p, 0) for p in names}}

    async def on_get_faults(self, req, resp) -> None:
        resp.media = {"faults": [f.as_json() for q in self.state.faults.values() for f in q]}

    async def on_post_faults(self, req, resp) -> None:
        try:
            fault = Fault.from_json(orjson.loads(await req.stream.read() or b"null"), self.providers.names)
        except (orjson.JSONDecodeError, Invalid) as exc:
            resp.status = 400
            resp.media = {"error": "invalid_fault",
                          "reason": str(exc) if isinstance(exc, Invalid) else "body is not valid JSON"}
            return
        self.state.faults[fault.provider].append(fault)
        resp.status = 201
        resp.media = {"fault": fault.as_json()}

    async def on_delete_faults(self, req, resp) -> None:
        provider = req.get_param("provider")
        faults = self.state.faults
        for name in list(faults):
            if provider is None or name == provider:
                faults.pop(name)
        resp.status = 204

    async def on_delete_tokens(self, req, resp) -> None:
        """Every token of one identity provider (?provider=NAME), or of all, expires now."""
        name = req.get_param("provider")
        for idp, tokens in self.state.tokens.items():
            if name is None or idp == name:
                tokens.clear()
        resp.status = 204

    async def on_post_reset(self, req, resp) -> None:
        self.state.reset()
        self.webhooks.reset()
        self.mailbox.messages.clear()
        resp.status = 204

    async def on_get_mail(self, req, resp) -> None:
        messages = self.mailbox.received(req.get_param("to"))
        resp.media = {"listening": self.mailbox.controller is not None, "total": len(messages),
                      "messages": messages}
