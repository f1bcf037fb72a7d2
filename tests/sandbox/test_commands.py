"""`python -m app sandbox configure URL`, run as an operator would."""
from __future__ import annotations

from app.sandbox import credentials
from tests.test_cli import cli


def test_sandbox_configure_points_every_provider_at_it(admin, sandbox):
    done = cli("sandbox", "configure", sandbox + "/")
    assert done.returncode == 0, done.stderr
    expected = credentials.auth_configs(sandbox)  # every described insurer
    assert {"PROVIDER_A", "PROVIDER_B", "PROVIDER_C", "MAIL_PROVIDER"} <= set(expected)
    rows = admin.execute("SELECT slug, auth_config FROM insurance.integrations WHERE slug = ANY(%s)",
                         (list(expected),)).fetchall()
    assert {r["slug"]: r["auth_config"] for r in rows} == expected


def test_sandbox_configure_is_refused_in_production_and_changes_nothing(admin, sandbox):
    """Issue 19: with APP_ENV=production it replaced the real providers' configuration (every
    emission then "succeeded" against nothing)."""
    import subprocess
    import sys

    from tests.conftest import ROOT, child_environ
    before = admin.execute("SELECT slug, auth_config, updated_at FROM insurance.integrations ORDER BY slug").fetchall()
    done = subprocess.run([sys.executable, "-m", "app", "sandbox", "configure", "http://127.0.0.1:9/"], cwd=ROOT,
                          env=child_environ(APP_ENV="production"), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "refused with APP_ENV=production" in done.stderr
    assert admin.execute("SELECT slug, auth_config, updated_at FROM insurance.integrations ORDER BY slug"
                         ).fetchall() == before
