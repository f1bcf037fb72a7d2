"""Real credentials of every surface for tests that cross surfaces (bad input, the fuzz run):
made the way the operator and the surfaces make them, never forged."""
from __future__ import annotations

import hashlib
import secrets

import argon2
import orjson

from tests.conftest import unique

# Cheap argon2 parameters for test users only: still a real argon2 hash.
_HASHER = argon2.PasswordHasher(time_cost=1, memory_cost=8192, parallelism=1)
PASSWORD = "correct horse battery staple"


def holder_bearer(services, email: str) -> dict[str, str]:
    """A post-sales token as /auth/otp/verify issues it."""
    return {"Authorization": f"Bearer {services.postsales_tokens.issue(email, email=email)}"}


def service_bearer(services) -> dict[str, str]:
    """The service-role bearer, as the worker builds it."""
    return {"Authorization": f"Bearer {services.service_tokens.issue('test')}"}


def make_channel(admin, branches=("v1", "v2")) -> dict:
    """A channel as `channels create` makes it: {id, name, key}; exchange the key on authorize."""
    key = "ik_" + secrets.token_urlsafe(32)
    row = admin.execute(
        """INSERT INTO insurance.channels (name, branches, api_key_hash, ia_keys, integration_payload)
           VALUES (%s, %s, %s, '{}', '{}') RETURNING id, name""",
        (unique("channel"), list(branches), hashlib.sha256(key.encode()).digest())).fetchone()
    return {"id": str(row["id"]), "name": row["name"], "key": key}


def make_dashboard_user(admin) -> dict:
    email = f"{unique('ops')}@insurance.invalid"
    admin.execute("INSERT INTO insurance.dashboard_users (email, password_hash) VALUES (%s, %s)",
                  (email, _HASHER.hash(PASSWORD)))
    return {"email": email, "password": PASSWORD}


def login_body(user: dict) -> bytes:
    return orjson.dumps({"email": user["email"], "password": user["password"]})
