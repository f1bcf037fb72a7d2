"""A burst of wrong passwords against a real API process: the attempt is reserved in SQL before
the argon2 verification, so at most 5 wrong passwords per e-mail are evaluated per window,
whatever the concurrency."""
from __future__ import annotations

import asyncio

import httpx

from tests.dashboard.conftest import PASSWORD

BURST = 60


async def test_parallel_wrong_passwords_get_at_most_five_evaluations(live_api, make_user, admin):
    user = make_user()
    # Every test client is 127.0.0.1: leave its IP window as the other tests expect it.
    admin.execute("DELETE FROM insurance.dashboard_login_failures WHERE key = 'ip:127.0.0.1'")

    async with httpx.AsyncClient(base_url=live_api, timeout=60) as http:
        async def attempt(password: str) -> httpx.Response:
            return await http.post("/api/auth/login", json={"email": user["email"], "password": password})

        answers = await asyncio.gather(*(attempt(f"wrong-{i}") for i in range(BURST)))
        statuses = [a.status_code for a in answers]
        assert sorted(set(statuses)) == [401, 429], statuses
        assert statuses.count(401) == 5, f"{statuses.count(401)} wrong passwords were evaluated"
        assert all(a.headers.get("Retry-After", "").isdigit() for a in answers if a.status_code == 429)
        # Locked out: even the right password is not evaluated until the window ends.
        assert (await attempt(PASSWORD)).status_code == 429
    admin.execute("DELETE FROM insurance.dashboard_login_failures WHERE key = 'ip:127.0.0.1'")


async def test_argon2_verifications_are_bounded_per_process(make_user, monkeypatch):
    """DASHBOARD_LOGIN_CONCURRENCY verifications at once (7 MiB each), whatever arrives."""
    import threading
    import time

    import falcon.testing

    from app.app import create_app
    from app.config import Config
    from app.dashboard import auth
    from tests.conftest import child_environ
    from tests.dashboard.conftest import login

    running = peak = 0
    lock = threading.Lock()
    real = auth._verify

    def counting(password_hash: str, password: str) -> bool:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        try:
            time.sleep(0.05)
            return real(password_hash, password)
        finally:
            with lock:
                running -= 1

    monkeypatch.setattr(auth, "_verify", counting)
    users = [make_user() for _ in range(8)]
    config = Config.from_env(child_environ(DASHBOARD_LOGIN_CONCURRENCY="2"))
    async with falcon.testing.ASGIConductor(create_app(config)) as client:
        answers = await asyncio.gather(*(login(client, u["email"], "wrong") for u in users))
    assert [a.status_code for a in answers] == [401] * len(users)
    assert peak == 2
