"""Post-sales fixtures: an app whose mail goes to a real SMTP server (aiosmtpd) and whose
CORS allows one origin, and helpers to read the mailed code and to log a holder in."""
from __future__ import annotations

import re
from email.message import EmailMessage

import falcon.testing
import pytest
from aiosmtpd.controller import Controller

from app.app import build_services, create_app
from app.config import Config
from tests.conftest import child_environ, free_port, unique
from tests.fixtures.mail import Mailbox

PREFIX = "/api/postsales/v1"
ALLOWED_ORIGIN = "https://holder.example.com"


@pytest.fixture(scope="session")
def mailbox():
    box = Mailbox()
    controller = Controller(box, hostname="127.0.0.1", port=free_port())
    controller.start()
    box.url = f"smtp://127.0.0.1:{controller.port}"
    yield box
    controller.stop()


@pytest.fixture(scope="session")
def ps_config(mailbox) -> Config:
    return Config.from_env(child_environ(SMTP_URL=mailbox.url, POSTSALES_ALLOWED_ORIGINS=ALLOWED_ORIGIN))


@pytest.fixture(scope="session")
def ps_services(ps_config):
    return build_services(ps_config)


@pytest.fixture(scope="session")
async def ps_client(ps_config, ps_services):
    async with falcon.testing.ASGIConductor(create_app(ps_config, ps_services)) as conductor:
        yield conductor


def code_of(message: EmailMessage) -> str:
    text = message.get_body(("plain",)).get_content()
    return re.search(r"\b(\d{6})\b", text).group(1)


@pytest.fixture
def holder_email() -> str:
    return f"{unique('holder')}@example.com"


@pytest.fixture
def bearer(ps_services):
    """Authorization headers of a post-sales token for an e-mail (as verify issues it)."""
    def make(address: str) -> dict[str, str]:
        token = ps_services.postsales_tokens.issue(address, email=address)
        return {"Authorization": f"Bearer {token}"}
    return make
