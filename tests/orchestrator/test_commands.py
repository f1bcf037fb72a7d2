"""`python -m app integrations ...`, run as an operator would."""
from __future__ import annotations

import orjson

from app.sandbox import credentials
from tests.test_cli import cli


def test_set_then_show_masks_the_credentials(admin):
    done = cli("integrations", "set", "provider_test_cli", "--auth-config",
               '{"baseUrl": "https://x.example", "apiKey": "very-secret-key", "clientSecret": "s3"}')
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)["slug"] == "PROVIDER_TEST_CLI"
    row = admin.execute("SELECT auth_config FROM insurance.integrations WHERE slug = 'PROVIDER_TEST_CLI'").fetchone()
    assert row["auth_config"]["apiKey"] == "very-secret-key"
    shown = cli("integrations", "show")
    assert shown.returncode == 0 and "very-secret-key" not in shown.stdout and "s3" not in shown.stdout
    [mine] = [r for r in orjson.loads(shown.stdout) if r["slug"] == "PROVIDER_TEST_CLI"]
    assert mine["auth_config"] == {"baseUrl": "https://x.example", "apiKey": "***", "clientSecret": "***"}


def test_bad_arguments_exit_2():
    for args in (["set", "PROVIDER_A", "--auth-config", "{not json"], ["set", "PROVIDER_A", "--auth-config", "[]"],
                 ["set", "9BAD", "--auth-config", "{}"], ["use-sandbox", "ftp://x"]):
        done = cli("integrations", *args)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, args


def test_use_sandbox_points_every_provider_at_it(admin, sandbox):
    done = cli("integrations", "use-sandbox", sandbox + "/")
    assert done.returncode == 0, done.stderr
    rows = admin.execute("SELECT slug, auth_config FROM insurance.integrations "
                         "WHERE slug IN ('PROVIDER_A', 'PROVIDER_B', 'MAIL_PROVIDER')").fetchall()
    assert {r["slug"]: r["auth_config"] for r in rows} == credentials.auth_configs(sandbox)
