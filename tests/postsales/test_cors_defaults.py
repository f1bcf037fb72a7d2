"""CORS that a newcomer's holder app on http://localhost:3000 gets under `make run`: the
development default, origins compared as a browser sends them, the setting taken from
`.env.development`, and a refused origin logged once with the setting to change."""
from __future__ import annotations

import falcon.testing
import structlog

from app.app import create_app
from app.config import SECRET_NAMES, Config
from tests.conftest import TEST_SECRETS, child_environ

OTP = "/api/postsales/v1/auth/otp/request"
PREFLIGHT = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}


def development(tmp_path, **overrides: str) -> Config:
    """APP_ENV=development with every secret set (the env file is then read only for settings)."""
    env = {k: v for k, v in child_environ(APP_ENV="development", DEV_ENV_FILE=str(tmp_path / ".env.development")).items()
           if k != "POSTSALES_ALLOWED_ORIGINS"}
    return Config.from_env({**env, **overrides})


def test_development_allows_the_usual_holder_app_origins_and_production_does_not(tmp_path):
    assert development(tmp_path).postsales_allowed_origins == ("http://localhost:3000", "http://127.0.0.1:3000")
    env = {k: v for k, v in child_environ(APP_ENV="production").items() if k != "POSTSALES_ALLOWED_ORIGINS"}
    assert Config.from_env(env).postsales_allowed_origins == ()
    env = {k: v for k, v in child_environ().items() if k != "POSTSALES_ALLOWED_ORIGINS"}
    assert Config.from_env(env).postsales_allowed_origins == (), "test mode: no default either"
    assert development(tmp_path, POSTSALES_ALLOWED_ORIGINS="").postsales_allowed_origins == (), \
        "an explicit empty setting turns the default off"


def test_a_trailing_slash_or_capitals_in_the_setting_still_match(tmp_path):
    config = development(tmp_path, POSTSALES_ALLOWED_ORIGINS="https://App.example.com/ , http://localhost:5173/")
    assert config.postsales_allowed_origins == ("https://app.example.com", "http://localhost:5173")


def test_the_development_env_file_carries_the_setting(tmp_path):
    (tmp_path / ".env.development").write_text(
        "".join(f"{name}={TEST_SECRETS[name]}\n" for name in SECRET_NAMES)
        + "POSTSALES_ALLOWED_ORIGINS=http://localhost:4200/\n")
    (tmp_path / ".env.development").chmod(0o600)
    env = {k: v for k, v in child_environ(APP_ENV="development", DEV_ENV_FILE=str(tmp_path / ".env.development")).items()
           if k not in SECRET_NAMES and k != "POSTSALES_ALLOWED_ORIGINS"}
    assert Config.from_env(env).postsales_allowed_origins == ("http://localhost:4200",)
    env["POSTSALES_ALLOWED_ORIGINS"] = "http://localhost:9999"
    assert Config.from_env(env).postsales_allowed_origins == ("http://localhost:9999",), "the environment wins"


async def test_a_refused_origin_is_logged_once_with_the_setting_to_change(tmp_path):
    config = Config.from_env(child_environ(POSTSALES_ALLOWED_ORIGINS="https://holder.example.com/"))
    async with falcon.testing.ASGIConductor(create_app(config)) as client:
        allowed = await client.simulate_options(OTP, headers={"Origin": "https://holder.example.com", **PREFLIGHT})
        assert allowed.headers.get("access-control-allow-origin") == "https://holder.example.com", \
            "the setting's trailing slash does not stop the match"
        with structlog.testing.capture_logs() as logs:
            for _ in range(3):
                refused = await client.simulate_options(OTP, headers={"Origin": "http://localhost:3001", **PREFLIGHT})
                assert "access-control-allow-origin" not in refused.headers
    lines = [e for e in logs if e["event"] == "cors_origin_refused"]
    assert len(lines) == 1, logs
    assert lines[0]["origin"] == "http://localhost:3001" and lines[0]["setting"] == "POSTSALES_ALLOWED_ORIGINS"
    assert "POSTSALES_ALLOWED_ORIGINS" in lines[0]["hint"]
