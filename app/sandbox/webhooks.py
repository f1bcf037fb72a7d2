"""Partner webhook receivers: a partner's endpoint, for demos and tests.

    POST /_sandbox/webhooks/{name}   a Standard Webhooks delivery: verified with the name's secrets
                                     (the `standardwebhooks` library), recorded, 204; 400 when the
                                     signature does not verify
    PUT  /_sandbox/webhooks/{name}   {"secret": "whsec_..." or [...], "failNext": N, "failStatus": 500,
                                     "redirect": url, "delay": s}: how the receiver answers
    GET  /_sandbox/webhooks?name=N   what arrived, oldest first: headers, raw body, verified
"""
from __future__ import annotations

import asyncio
import collections
import itertools
import time
from typing import Any

import orjson

from app.sandbox.faults import Invalid
from app.sandbox.state import MAX_RECORDS


class WebhookReceivers:
    """Partner endpoints: what each name was told (secrets, failures) and what arrived."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.settings: dict[str, dict[str, Any]] = {}
        self.received: collections.deque[dict[str, Any]] = collections.deque(maxlen=MAX_RECORDS)
        self.seq = itertools.count(1)

    async def on_put_one(self, req, resp, name: str) -> None:
        from standardwebhooks.webhooks import EmptyWebhookSecretError, Webhook
        try:
            data = orjson.loads(await req.stream.read() or b"{}")
            if not isinstance(data, dict):
                raise Invalid("body must be a JSON object")
            secrets_ = data.get("secret", [])
            secrets_ = [secrets_] if isinstance(secrets_, str) else secrets_
            if not isinstance(secrets_, list) or not all(isinstance(x, str) and x for x in secrets_):
                raise Invalid("secret is a whsec_ string or a list of them")
            fail = data.get("failNext", 0)
            status = data.get("failStatus", 500)
            delay = data.get("delay", 0)
            redirect = data.get("redirect")
            if isinstance(fail, bool) or not isinstance(fail, int) or fail < 0:
                raise Invalid("failNext must be an integer >= 0")
            if isinstance(status, bool) or not isinstance(status, int) or not 300 <= status <= 599:
                raise Invalid("failStatus must be an HTTP status 300-599")
            if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not 0 <= delay <= 300:
                raise Invalid("delay must be a number of seconds in [0, 300]")
            if redirect is not None and not isinstance(redirect, str):
                raise Invalid("redirect must be a URL")
            for secret in secrets_:
                Webhook(secret)
        except (orjson.JSONDecodeError, ValueError, Invalid, EmptyWebhookSecretError) as exc:
            resp.status = 400
            resp.media = {"error": "invalid_receiver", "reason": str(exc) if isinstance(exc, Invalid) else "bad body or secret"}
            return
        self.settings[name] = {"secrets": secrets_, "failNext": fail, "failStatus": status,
                               "redirect": redirect, "delay": float(delay)}
        resp.media = {"name": name, "secrets": len(secrets_), "failNext": fail, "failStatus": status,
                      "redirect": redirect, "delay": delay}

    async def on_post_one(self, req, resp, name: str) -> None:
        from standardwebhooks.webhooks import Webhook, WebhookVerificationError
        raw = await req.stream.read()
        setting = self.settings.get(name, {"secrets": [], "failNext": 0, "failStatus": 500, "redirect": None, "delay": 0})
        headers = {k: req.get_header(k) or "" for k in ("webhook-id", "webhook-timestamp", "webhook-signature")}
        verified = None
        if setting["secrets"]:
            verified = False
            for secret in setting["secrets"]:
                try:
                    Webhook(secret).verify(raw, headers)
                    verified = True
                    break
                except (WebhookVerificationError, ValueError):
                    continue
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = None
        record = {"seq": next(self.seq), "at": time.time(), "name": name, "headers": headers,
                  "raw": raw[:65536].decode("utf-8", "replace"), "body": body, "verified": verified}
        self.received.append(record)
        if setting["delay"]:
            await asyncio.sleep(setting["delay"])
        if setting["redirect"]:
            record["status"] = resp.status = 307
            resp.set_header("Location", setting["redirect"])
        elif setting["failNext"] > 0:
            setting["failNext"] -= 1
            record["status"] = resp.status = setting["failStatus"]
            resp.media = {"error": "injected_failure"}
        elif verified is False:
            record["status"] = resp.status = 400
            resp.media = {"error": "invalid_signature"}
        else:
            record["status"] = resp.status = 204

    async def on_get(self, req, resp) -> None:
        name = req.get_param("name")
        rows = [r for r in self.received if name is None or r["name"] == name]
        resp.media = {"total": len(rows), "webhooks": rows}
