"""Gateway fixtures: channels made by the operator, tokens obtained through authorize."""
from __future__ import annotations

import hashlib
import secrets
from typing import Any

import orjson
import pytest

from app.gateway import BRANCHES
from tests.conftest import unique


def api(branch: str, path: str) -> str:
    return f"/api/gateway/{branch}/{path.lstrip('/')}"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def make_channel(admin):
    """A channel row as `channels create` makes it; returns {id, name, key}."""
    def make(branches: tuple[str, ...] = tuple(BRANCHES), ia_keys: dict | None = None,
             integration_payload: dict | None = None, active: bool = True) -> dict[str, Any]:
        key = "ik_" + secrets.token_urlsafe(32)
        row = admin.execute(
            """INSERT INTO insurance.channels (name, branches, api_key_hash, ia_keys, integration_payload,
                                               active, revoked_at)
               VALUES (%s, %s, %s, %s, %s, %s, CASE WHEN %s THEN NULL ELSE now() END) RETURNING id, name""",
            (unique("channel"), list(branches), hashlib.sha256(key.encode()).digest(),
             orjson.dumps(ia_keys or {}).decode(), orjson.dumps(integration_payload or {}).decode(),
             active, active),
        ).fetchone()
        return {"id": str(row["id"]), "name": row["name"], "key": key}
    return make


@pytest.fixture
def sell(admin):
    """Gives a channel packages to sell (as `channels create --package` does)."""
    def give(channel: dict, *packages: dict) -> None:
        for package in packages:
            admin.execute("INSERT INTO insurance.channel_packages (channel_id, package_id) VALUES (%s, %s)",
                          (channel["id"], package["id"]))
    return give


@pytest.fixture
def authorize(client):
    """The access token of a channel on a branch, through GET .../auth/authorize."""
    async def get(channel: dict, branch: str = "v1") -> str:
        resp = await client.simulate_get(api(branch, "auth/authorize"), headers={"x-api-key": channel["key"]})
        assert resp.status_code == 200, resp.text
        return resp.json["data"]["access_token"]
    return get


@pytest.fixture
def revoke(admin):
    def run(channel: dict) -> None:
        admin.execute("UPDATE insurance.channels SET active = false, revoked_at = now() WHERE id = %s",
                      (channel["id"],))
    return run
