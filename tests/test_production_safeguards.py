"""Issue 41, hostile clients round four: what production refuses at start, and what no mode
does silently. Real processes (`python -m app ...`), a real SMTP server (aiosmtpd)."""
from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult

from app.config import Config, ConfigError
from app.mail import Mailer
from tests.conftest import ROOT, TEST_SECRETS, child_environ, free_port
from tests.fixtures.mail import Mailbox

MAIL = "smtps://codes:pw@mail.example.com"


def run_app(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def production(**overrides: str) -> dict[str, str]:
    return child_environ(**{"APP_ENV": "production", "SMTP_URL": MAIL, **overrides})


# ---------------------------------------------------------------- 1. the mail server

def test_production_refuses_to_serve_without_an_explicit_mail_server():
    env = {k: v for k, v in production(PORT=str(free_port())).items() if k != "SMTP_URL"}
    done = run_app(env, "serve")
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("python -m app: error: production refuses to start: SMTP_URL is not set")


@pytest.mark.parametrize("url", ["smtp://127.0.0.1:1025", "smtps://u:secret@localhost", "smtp://[::1]:25"])
def test_production_refuses_a_mail_server_on_this_machine_unless_told(url):
    done = run_app(production(SMTP_URL=url, PORT=str(free_port())), "serve")
    assert done.returncode == 2 and "SMTP_ALLOW_LOOPBACK" in done.stderr
    assert "secret" not in done.stderr, "the URL's password is never quoted"
    told = Config.from_env(production(SMTP_URL=url, SMTP_ALLOW_LOOPBACK="true"))
    assert told.mail_problem({"SMTP_URL": url}) is None


def test_development_and_test_keep_the_sandbox_catcher_by_default():
    assert Config.from_env({"APP_ENV": "test"}).mail_problem({}) is None
    assert Config.from_env(production()).mail_problem({"SMTP_URL": MAIL}) is None


class PlainAuthServer(Mailbox):
    """An SMTP server without STARTTLS that accepts AUTH in clear (aiosmtpd refuses it unless told)."""

    def __init__(self) -> None:
        super().__init__()
        self.logins: list[tuple[bytes, bytes]] = []

    def authenticate(self, server, session, envelope, mechanism, auth_data) -> AuthResult:
        self.logins.append((auth_data.login, auth_data.password))
        return AuthResult(success=True)


async def test_credentials_are_never_sent_over_plain_smtp():
    box = PlainAuthServer()
    controller = Controller(box, hostname="127.0.0.1", port=free_port(), authenticator=box.authenticate,
                            auth_require_tls=False)
    controller.start()
    try:
        mailer = Mailer(f"smtp://codes:hunter2@127.0.0.1:{controller.port}", "Insurance <no-reply@insurance.invalid>",
                        timeout=5, total_timeout=10)
        mailer.send_otp_later("ada@example.com", "123456", 600)
        await mailer.drain()
        await asyncio.sleep(0.1)
        assert box.logins == [], "the password crossed the wire in clear"
        assert box.messages == [], "the code was sent over a connection without TLS"
        # Without credentials a plain relay still takes the mail (development's catcher).
        plain = Mailer(f"smtp://127.0.0.1:{controller.port}", "Insurance <no-reply@insurance.invalid>")
        plain.send_otp_later("ada@example.com", "123456", 600)
        await plain.drain()
        assert len(box.messages) == 1
    finally:
        controller.stop()


# ---------------------------------------------------------------- 6. the command line's mode

def test_the_command_line_refuses_to_guess_its_mode(tmp_path):
    env = {k: v for k, v in child_environ(DEV_ENV_FILE=str(tmp_path / "dev.env")).items() if k != "APP_ENV"}
    done = run_app(env, "channels", "create", "--name", "guessed", "--branch", "integrations/v1",
                   "--integration-payload", '{"webhooks": ["http://127.0.0.1:6379/x"]}')
    assert done.returncode == 2, done.stdout
    assert done.stderr.strip() == (
        "python -m app: error: APP_ENV is not set: the command line runs only in an explicit mode, as serve and "
        "worker do (APP_ENV=production in a deployment; APP_ENV=development on a developer's machine)")
    assert not (tmp_path / "dev.env").exists(), "no development secrets drawn"


# ---------------------------------------------------------------- 7. secrets and the test mode

@pytest.mark.parametrize("weak", ["a" * 32, "ab" * 20, "password" * 4])
def test_production_refuses_a_predictable_secret(weak):
    with pytest.raises(ConfigError) as refused:
        Config.from_env({**production(), "OTP_HASH_SECRET": weak})
    assert "OTP_HASH_SECRET is too predictable" in str(refused.value)
    assert weak not in str(refused.value)


def test_random_secrets_pass_the_measure():
    import secrets

    from app.config import secret_bits
    assert secret_bits(secrets.token_urlsafe(48)) > 300 and secret_bits(secrets.token_hex(32)) > 200
    assert all(secret_bits(value) >= 128 for value in TEST_SECRETS.values())


def test_the_test_mode_listens_on_loopback_only():
    done = run_app(child_environ(HOST="0.0.0.0", PORT=str(free_port())), "serve")
    assert done.returncode == 2
    assert done.stderr.strip().endswith("test mode has none of production's safeguards")
    done = run_app(child_environ(PORT=str(free_port())), "serve", "--host", "::")
    assert done.returncode == 2 and "loopback only" in done.stderr
    done = run_app(child_environ(), "worker", "--metrics-port", str(free_port()), "--metrics-host", "0.0.0.0")
    assert done.returncode == 2 and "loopback only" in done.stderr


# ---------------------------------------------------------------- 5. and Also: what the API tells anyone

def operators_only_app(tmp_path):
    from falcon import testing

    from app.app import create_app
    plan = tmp_path / "sqitch.plan"
    plan.write_text((ROOT / "sqitch.plan").read_text()
                    + "not_deployed_yet 2026-01-01T00:00:00Z A <a@b.c> # a change from the future\n")
    env = production(METRICS_ALLOWED_IPS="10.9.9.9", SQITCH_PLAN=str(plan))
    return testing.TestClient(create_app(Config.from_env(env)))


def test_the_404_lists_internal_routes_only_to_operators(tmp_path):
    client = operators_only_app(tmp_path)
    stranger = client.simulate_get("/api/integrations/no-such-route", remote_addr="203.0.113.9")
    assert stranger.status_code == 404 and "details" not in stranger.json["error"]
    assert "/api/integrations/" not in stranger.text
    operator = client.simulate_get("/api/integrations/no-such-route", remote_addr="10.9.9.9")
    assert any("/api/integrations/dispatch" in route for route in operator.json["error"]["details"]["routes"])
    partner = client.simulate_get("/api/gateway/v1/risk-item", remote_addr="203.0.113.9")
    assert "GET POST /api/gateway/v1/risk-items" in partner.json["error"]["details"]["routes"], \
        "a public prefix still points the way"


def test_readyz_names_pending_migrations_only_to_operators(tmp_path):
    client = operators_only_app(tmp_path)
    stranger = client.simulate_get("/readyz", remote_addr="203.0.113.9")
    assert stranger.status_code == 503
    assert stranger.json == {"status": "unavailable", "database": "ok", "pendingMigrationCount": 1}
    operator = client.simulate_get("/readyz", remote_addr="10.9.9.9")
    assert operator.json["pendingMigrations"] == ["not_deployed_yet"]
