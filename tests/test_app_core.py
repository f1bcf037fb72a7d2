"""The skeleton every surface stands on: health, readiness, the error envelope, request ids."""
from __future__ import annotations

import os
import stat

import falcon
import falcon.testing
import httpx
import pytest

from app.app import build_services, create_app
from app.config import SECRET_NAMES, Config, ConfigError, parse_duration
from tests.conftest import TEST_SECRETS, child_environ


async def test_healthz(client):
    resp = await client.simulate_get("/healthz")
    assert resp.status_code == 200
    assert resp.json == {"status": "ok"}
    assert resp.headers["x-request-id"]


async def test_readyz_when_every_change_is_deployed(client):
    resp = await client.simulate_get("/readyz")
    assert resp.status_code == 200, resp.text
    assert resp.json["status"] == "ready"
    assert resp.json["pendingMigrations"] == []


async def test_readyz_is_503_when_a_planned_change_is_not_deployed(tmp_path, config):
    plan = tmp_path / "sqitch.plan"
    plan.write_text(config.sqitch_plan.read_text()
                    + "not_deployed_yet 2026-01-01T00:00:00Z A <a@b.c> # a change from the future\n")
    cfg = Config.from_env(child_environ(SQITCH_PLAN=str(plan)))
    async with falcon.testing.ASGIConductor(create_app(cfg)) as conductor:
        resp = await conductor.simulate_get("/readyz")
    assert resp.status_code == 503
    assert resp.json["pendingMigrations"] == ["not_deployed_yet"]


async def test_readyz_is_503_while_a_rework_is_not_deployed(tmp_path, config):
    """A reworked change has the name of the one it reworks: the app that needs the new text is
    not ready while only the old one is deployed (docs/operations.md "Upgrading")."""
    plan = tmp_path / "sqitch.plan"
    plan.write_text(config.sqitch_plan.read_text()
                    + "@v9.9.9 2026-01-01T00:00:00Z A <a@b.c> # a release\n"
                    + "roles [roles@v9.9.9] 2026-01-01T00:00:01Z A <a@b.c> # roles reworked\n")
    cfg = Config.from_env(child_environ(SQITCH_PLAN=str(plan)))
    async with falcon.testing.ASGIConductor(create_app(cfg)) as conductor:
        resp = await conductor.simulate_get("/readyz")
    assert resp.status_code == 503
    assert resp.json["pendingMigrations"] == ["roles"]


async def test_readyz_is_503_when_the_database_is_unreachable():
    cfg = Config.from_env(child_environ(DATABASE_URL="postgresql://insurance_app@127.0.0.1:1/none"))
    async with falcon.testing.ASGIConductor(create_app(cfg)) as conductor:
        assert (await conductor.simulate_get("/healthz")).status_code == 200
        resp = await conductor.simulate_get("/readyz")
    assert resp.status_code == 503
    assert resp.json["database"] == "unreachable"


async def test_unknown_route_is_404_in_the_envelope(client):
    resp = await client.simulate_get("/no/such/route", headers={"X-Request-Id": "abc-123"})
    assert resp.status_code == 404
    assert resp.json == {"success": False, "error": {"code": "NOT_FOUND", "message": "resource not found"},
                         "requestId": "abc-123"}


async def test_wrong_method_is_405_with_allow(client):
    resp = await client.simulate_post("/healthz")
    assert resp.status_code == 405
    assert resp.json["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert "GET" in resp.headers["allow"]


async def test_a_crash_is_500_with_request_id_and_no_traceback(config):
    class Crash:
        async def on_get(self, req, resp):
            raise RuntimeError("secret detail: password=hunter2")

    app = create_app(config, build_services(config))
    app.add_route("/crash", Crash())
    async with falcon.testing.ASGIConductor(app) as conductor:
        resp = await conductor.simulate_get("/crash")
    assert resp.status_code == 500
    body = resp.json
    assert body["error"] == {"code": "INTERNAL_ERROR", "message": "internal server error"}
    assert body["requestId"] == resp.headers["x-request-id"]
    assert "hunter2" not in resp.text and "Traceback" not in resp.text


def test_production_refuses_missing_or_short_secrets():
    env = {**TEST_SECRETS, "APP_ENV": "production"}
    assert Config.from_env(env).production
    with pytest.raises(ConfigError, match="AUTH_SECRET is missing"):
        Config.from_env({**env, "AUTH_SECRET": ""})
    with pytest.raises(ConfigError, match="shorter than 32 bytes"):
        Config.from_env({**env, "POSTSALES_JWT_SECRET": "short"})


def test_production_names_every_missing_secret_in_one_message():
    with pytest.raises(ConfigError) as refused:
        Config.from_env({"APP_ENV": "production", "AUTH_SECRET": "short"})
    message = str(refused.value)
    for name in SECRET_NAMES:
        assert name in message
    assert "AUTH_SECRET is shorter than 32 bytes" in message
    assert "SERVICE_ROLE_SECRET is missing" in message


def test_development_processes_share_one_secrets_file(tmp_path):
    env_file = tmp_path / ".env.development"
    first = Config.from_env({"APP_ENV": "development", "DEV_ENV_FILE": str(env_file)})
    second = Config.from_env({"APP_ENV": "development", "DEV_ENV_FILE": str(env_file)})
    assert first.secrets == second.secrets and not first.generated_secrets
    assert len(first.secret("SERVICE_ROLE_SECRET")) >= 32
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    # The environment still wins over the file.
    third = Config.from_env({"APP_ENV": "development", "DEV_ENV_FILE": str(env_file), "AUTH_SECRET": "x" * 40})
    assert third.secret("AUTH_SECRET") == "x" * 40
    assert third.secret("SERVICE_ROLE_SECRET") == first.secret("SERVICE_ROLE_SECRET")


@pytest.mark.needs_root  # making a device node
def test_a_secrets_file_that_is_no_regular_file_stops_start_up_and_is_left_alone(tmp_path):
    device = tmp_path / "null"
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's twin
    with pytest.raises(ConfigError, match="is not a regular file"):
        Config.from_env({"APP_ENV": "development", "DEV_ENV_FILE": str(device)})
    assert stat.S_ISCHR(device.stat().st_mode)


def test_test_mode_generates_ephemeral_secrets():
    cfg = Config.from_env({"APP_ENV": "test"})
    assert "AUTH_SECRET" in cfg.generated_secrets
    assert len(cfg.secret("AUTH_SECRET")) >= 32


@pytest.mark.parametrize("value,seconds", [("15m", 900), ("1h", 3600), ("24h", 86400), ("7d", 604800)])
def test_durations(value, seconds):
    assert parse_duration("X", value) == seconds


@pytest.mark.parametrize("value", ["", "1", "h", "0h", "1w", "-1h", "1.5h"])
def test_bad_durations_stop_start_up(value):
    with pytest.raises(ConfigError, match="is not a duration"):
        parse_duration("POSTSALES_JWT_EXPIRATION", value)


def test_live_server_answers_health_and_readiness(live_api):
    assert httpx.get(f"{live_api}/healthz").status_code == 200
    ready = httpx.get(f"{live_api}/readyz")
    assert ready.status_code == 200, ready.text


async def test_every_route_is_in_the_openapi_document(client, app):
    from falcon.inspect import inspect_routes

    resp = await client.simulate_get("/openapi.json")
    assert resp.status_code == 200
    documented = set(resp.json["paths"])
    served = {route.path for route in inspect_routes(app)}
    assert served - documented == set(), "routes missing from app/openapi/*.yaml"


def test_a_secrets_file_open_to_others_is_refused_and_left_alone(tmp_path):
    """Issue 19: an existing file's mode was never checked (and a rewrite went through a
    predictable name without O_EXCL)."""
    env_file = tmp_path / ".env.development"
    Config.from_env({"APP_ENV": "development", "DEV_ENV_FILE": str(env_file)})
    content = env_file.read_text()
    for mode in (0o640, 0o604):
        env_file.chmod(mode)
        with pytest.raises(ConfigError, match=r"open to others \(mode 0(640|604)\).*chmod 600"):
            Config.from_env({"APP_ENV": "development", "DEV_ENV_FILE": str(env_file)})
        assert env_file.read_text() == content and stat.S_IMODE(env_file.stat().st_mode) == mode


def test_a_secrets_file_missing_names_is_completed_through_a_fresh_private_file(tmp_path):
    env_file = tmp_path / ".env.development"
    env_file.write_text("AUTH_SECRET=" + "k" * 48 + "\n")
    env_file.chmod(0o600)
    # What the old code wrote through: a name anyone could have placed beforehand.
    planted = tmp_path / f".env.development.{os.getpid()}"
    planted.symlink_to(tmp_path / "elsewhere")
    config = Config.from_env({"APP_ENV": "development", "DEV_ENV_FILE": str(env_file)})
    assert config.secret("AUTH_SECRET") == "k" * 48 and len(config.secret("OTP_HASH_SECRET")) >= 32
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert not (tmp_path / "elsewhere").exists(), "nothing written through the planted name"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".env.development", planted.name]


async def test_the_root_is_a_landing_page_and_api_leads_to_it(client):
    """Issue 21: `/` and `/api` answered a bare 404 to a newcomer's browser; issue 29: the page
    leads to the reference a person reads (/docs) and to the partner and holder documents."""
    resp = await client.simulate_get("/")
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/html")
    for link in ('href="/docs"', 'href="/openapi/partner.json"', 'href="/openapi/holder.json"',
                 'href="/backoffice"', 'href="/metrics"', 'href="/healthz"'):
        assert link in resp.text, link
    assert "https://" not in resp.text, "nothing loaded from a CDN"
    moved = await client.simulate_get("/api")
    assert moved.status_code == 302 and moved.headers["location"] == "/"
