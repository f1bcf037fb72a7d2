"""The sandbox's mail catcher: an SMTP server (aiosmtpd) that keeps what it receives, so that
`make run` alone lets a newcomer read the OTP mail of a holder (GET /_sandbox/mail)."""
from __future__ import annotations

import collections
import datetime
import email
import email.policy
import logging
from typing import Any

log = logging.getLogger("app.sandbox.mail")

MAX_MESSAGES = 1000


def _text(message: email.message.EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",))
    if part is None:
        return ""
    try:
        return part.get_content()
    except (LookupError, ValueError):
        return part.get_payload(decode=True).decode("utf-8", "replace")


class MailCatcher:
    """aiosmtpd handler and store: every message accepted, kept in memory, newest last."""

    def __init__(self) -> None:
        self.messages: collections.deque[dict[str, Any]] = collections.deque(maxlen=MAX_MESSAGES)
        self.controller = None

    async def handle_DATA(self, server, session, envelope) -> str:
        message = email.message_from_bytes(envelope.original_content or envelope.content,
                                           policy=email.policy.default)
        self.messages.append({
            "to": list(envelope.rcpt_tos),
            "from": envelope.mail_from,
            "subject": str(message.get("Subject", "")),
            "text": _text(message),
            "receivedAt": datetime.datetime.now(datetime.UTC).isoformat(),
        })
        return "250 Message accepted for delivery"

    def start(self, host: str, port: int) -> bool:
        """Listen on host:port; False (and a warning) when the port is taken."""
        from aiosmtpd.controller import Controller
        controller = Controller(self, hostname=host, port=port)
        try:
            controller.start()
        except (OSError, RuntimeError) as exc:
            log.warning("sandbox mail catcher not started on %s:%s: %s", host, port, exc)
            return False
        self.controller = controller
        return True

    def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()
            self.controller = None

    def received(self, to: str | None = None) -> list[dict[str, Any]]:
        rows = list(self.messages)
        if to:
            rows = [m for m in rows if any(r.lower() == to.lower() for r in m["to"])]
        return rows


class MailLifespan:
    """Falcon middleware: starts the mail catcher with the sandbox and stops it with it (port 0: none)."""

    def __init__(self, mailbox: MailCatcher, host: str, port: int) -> None:
        self.mailbox, self.host, self.port = mailbox, host, port

    async def process_startup(self, scope, event) -> None:
        if self.port:
            self.mailbox.start(self.host, self.port)

    async def process_shutdown(self, scope, event) -> None:
        self.mailbox.stop()
