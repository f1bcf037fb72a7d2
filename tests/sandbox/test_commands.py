"""`python -m app sandbox configure URL`, run as an operator would."""
from __future__ import annotations

from app.sandbox import credentials
from tests.test_cli import cli


def test_sandbox_configure_points_every_provider_at_it(admin, sandbox):
    done = cli("sandbox", "configure", sandbox + "/")
    assert done.returncode == 0, done.stderr
    rows = admin.execute("SELECT slug, auth_config FROM insurance.integrations "
                         "WHERE slug IN ('PROVIDER_A', 'PROVIDER_B', 'MAIL_PROVIDER')").fetchall()
    assert {r["slug"]: r["auth_config"] for r in rows} == credentials.auth_configs(sandbox)
