"""Outgoing mail over SMTP (`SMTP_URL`, `MAIL_FROM`): the post-sales login code.

Messages have a text and an HTML part rendered from `app/templates/` with jinja2 (HTML
autoescaped). `send_otp_later` sends in the background so that an answer never waits for, or
reveals, the mail server; `drain` awaits what is still in flight at shutdown.
"""
from __future__ import annotations

import asyncio
import functools
from email.message import EmailMessage
from urllib.parse import unquote, urlsplit

import structlog

from app.config import Config, ConfigError

log = structlog.get_logger("app.mail")

@functools.cache
def _templates():
    """Loaded at the first mail, not at start: jinja2 is about 4 MB of an API process
    that may never send one (docs/benchmarks.md "Memory")."""
    import jinja2
    return jinja2.Environment(
        loader=jinja2.PackageLoader("app", "templates"),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",), default=False),
        undefined=jinja2.StrictUndefined,
    )


def describe_duration(seconds: int) -> str:
    """600 -> '10 minutes', 3600 -> '1 hour', 90 -> '90 seconds'."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} seconds"


class Mailer:
    """Sends the OTP mail through one SMTP server; built once by build_services."""

    def __init__(self, smtp_url: str, mail_from: str, timeout: float = 15.0, total_timeout: float = 30.0) -> None:
        url = urlsplit(smtp_url)
        if url.scheme not in ("smtp", "smtps") or not url.hostname:
            raise ConfigError(f"SMTP_URL={smtp_url!r} must look like smtp://host:port or smtps://user:pass@host")
        self._smtp = {
            "hostname": url.hostname,
            "port": url.port or (465 if url.scheme == "smtps" else 25),
            "username": unquote(url.username) if url.username else None,
            "password": unquote(url.password) if url.password else None,
            "use_tls": url.scheme == "smtps",
            "timeout": timeout,
        }
        if url.scheme == "smtp" and url.username:
            # Credentials never travel in clear: STARTTLS must succeed (aiosmtplib's default only
            # tries it when offered, and would send AUTH over a plain connection otherwise).
            self._smtp["start_tls"] = True
        self.mail_from = mail_from
        # aiosmtplib's timeout bounds each command; a server that answers each one slowly
        # could still hold a send (and its task) for ever: this bounds the whole send.
        self.total_timeout = total_timeout
        self._pending: set[asyncio.Task] = set()

    @classmethod
    def from_config(cls, config: Config) -> Mailer:
        return cls(config.smtp_url, config.mail_from, config.http_read_timeout, config.http_total_timeout)

    def otp_message(self, to: str, code: str, ttl_seconds: int) -> EmailMessage:
        context = {"code": code, "validity": describe_duration(ttl_seconds)}
        message = EmailMessage()
        message["From"] = self.mail_from
        message["To"] = to
        # The code stays in the body: a subject shows on lock screens and in mail servers' logs.
        message["Subject"] = "Your access code"
        message.set_content(_templates().get_template("otp_email.txt.j2").render(context))
        message.add_alternative(_templates().get_template("otp_email.html.j2").render(context), subtype="html")
        return message

    async def send(self, message: EmailMessage) -> None:
        import aiosmtplib  # on the first mail: most API processes never send one (about 3 MB)
        async with asyncio.timeout(self.total_timeout):
            await aiosmtplib.send(message, **self._smtp)

    def send_otp_later(self, to: str, code: str, ttl_seconds: int) -> None:
        """Renders and sends in the background (the answer takes as long with mail as
        without); a failure is logged with the recipient's domain only."""
        task = asyncio.create_task(self._send_otp(to, code, ttl_seconds))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _send_otp(self, to: str, code: str, ttl_seconds: int) -> None:
        import aiosmtplib
        try:
            await self.send(self.otp_message(to, code, ttl_seconds))
        except (TimeoutError, aiosmtplib.SMTPException, OSError) as exc:
            log.error("mail_not_sent", to_domain=to.rpartition("@")[2], error=type(exc).__name__)

    async def drain(self) -> None:
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)
