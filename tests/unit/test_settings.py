"""One declaration per setting, documents written from it, and defaults that are safe (issue 30):
serve and worker never guess their mode, production refuses secrets that repeat, and the
internal API reference is not public outside development."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest
from falcon import testing

from app.app import create_app
from app.config import SECRET_NAMES, Config, ConfigError, settings
from tests.conftest import ROOT, TEST_SECRETS, child_environ, free_port


def test_the_documents_are_written_from_the_declarations():
    """docs/configuration.md and .env.example are `python -m app settings`' output: a setting
    added, changed or removed in app/config.py without running it fails here."""
    done = subprocess.run([sys.executable, "-m", "app", "settings", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    example = (ROOT / ".env.example").read_text()
    reference = (ROOT / "docs" / "configuration.md").read_text()
    for item in settings():
        assert re.search(rf"^#? ?{item.name}=", example, re.MULTILINE), f".env.example lacks {item.name}"
        assert f"| `{item.name}` |" in reference, f"docs/configuration.md lacks {item.name}"


def test_every_variable_the_app_reads_is_declared_once():
    declared = [item.name for item in settings()]
    assert len(declared) == len(set(declared)), "a setting declared twice"
    read = set()
    for path in (ROOT / "app").rglob("*.py"):
        read |= set(re.findall(r"""(?:environ|env)(?:\.get\(|\[)\s*["']([A-Z][A-Z0-9_]+)["']""", path.read_text()))
    # libpq's own variable, which `migrate` extends for psql (client_min_messages): not a setting.
    libpq = {"PGOPTIONS"}
    assert read - set(declared) - libpq == set(), "read from the environment but not declared in app/config.py"


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["worker"]])
def test_the_servers_refuse_to_guess_their_mode(command):
    env = {k: v for k, v in child_environ().items() if k != "APP_ENV"}
    done = subprocess.run([sys.executable, "-m", "app", *command], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == ("python -m app: error: APP_ENV is not set: serve and worker run only in an "
                                   "explicit mode (APP_ENV=production in a deployment; make run sets "
                                   "APP_ENV=development)")


def test_the_asgi_entry_point_refuses_to_guess_too():
    env = {k: v for k, v in child_environ().items() if k != "APP_ENV"}
    done = subprocess.run([sys.executable, "-c", "import app.asgi"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0 and "APP_ENV is not set" in done.stderr


def test_production_refuses_secrets_that_repeat():
    env = {**TEST_SECRETS, "APP_ENV": "production", "AUTH_SECRET_V2": TEST_SECRETS["AUTH_SECRET"],
           "SERVICE_ROLE_SECRET": TEST_SECRETS["AUTH_SECRET"]}
    with pytest.raises(ConfigError) as refused:
        Config.from_env(env)
    assert "AUTH_SECRET and AUTH_SECRET_V2 and SERVICE_ROLE_SECRET are equal (each secret must be different)" \
        in str(refused.value)
    assert Config.from_env({**TEST_SECRETS, "APP_ENV": "production"}).production
    assert len(set(TEST_SECRETS.values())) == len(SECRET_NAMES)


def test_smtp_url_follows_the_sandbox_mail_catcher():
    """Issue 30: under make run a changed SANDBOX_SMTP_PORT was not followed by SMTP_URL, so the
    holder's codes went to another port (tests/system/test_walkthrough.py runs make run without SMTP_URL)."""
    assert Config.from_env({"APP_ENV": "test", "SANDBOX_SMTP_PORT": "2525"}).smtp_url == "smtp://127.0.0.1:2525"
    assert Config.from_env({"APP_ENV": "test"}).smtp_url == "smtp://127.0.0.1:1025"
    explicit = Config.from_env({"APP_ENV": "test", "SANDBOX_SMTP_PORT": "2525", "SMTP_URL": "smtp://mail:25"})
    assert explicit.smtp_url == "smtp://mail:25"


@pytest.mark.parametrize("mode", ["test", "production"])
def test_the_internal_reference_is_for_operators_only_outside_development(mode):
    env = {**child_environ(), **TEST_SECRETS, "APP_ENV": mode, "METRICS_ALLOWED_IPS": "10.9.9.9",
           "DATABASE_URL": f"postgresql://nobody@127.0.0.1:{free_port()}/none"}
    client = testing.TestClient(create_app(Config.from_env(env)))
    for path in ("/openapi.json", "/openapi/internal.json"):
        refused = client.simulate_get(path)
        assert refused.status_code == 403, path
        assert refused.json["error"]["code"] == "FORBIDDEN"
        assert "METRICS_ALLOWED_IPS" in refused.json["error"]["message"]
    for audience in ("partner", "holder"):
        assert client.simulate_get(f"/openapi/{audience}.json").status_code == 200
    allowed = testing.TestClient(create_app(Config.from_env({**env, "METRICS_ALLOWED_IPS": "127.0.0.1"})))
    assert allowed.simulate_get("/openapi/internal.json", remote_addr="127.0.0.1").status_code == 200


def test_development_shows_the_internal_reference_to_anyone(tmp_path):
    env = {**child_environ(), **TEST_SECRETS, "APP_ENV": "development", "METRICS_ALLOWED_IPS": "10.9.9.9",
           "DEV_ENV_FILE": str(tmp_path / ".env.development"),
           "DATABASE_URL": f"postgresql://nobody@127.0.0.1:{free_port()}/none"}
    client = testing.TestClient(create_app(Config.from_env(env)))
    assert client.simulate_get("/openapi/internal.json").status_code == 200
