"""`python -m app integrations ...`, run as an operator would."""
from __future__ import annotations

import getpass

import orjson

from tests.test_cli import cli


def test_set_then_show_masks_the_credentials(admin, sandbox):
    admin.execute("DELETE FROM insurance.integrations WHERE slug = 'PROVIDER_A'")
    done = cli("integrations", "set", "provider_a", "--auth-config",
               '{"baseUrl": "https://x.example", "apiKey": "very-secret-key", "clientSecret": "s3"}',
               "--actor", "ops@example.com")
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)["slug"] == "PROVIDER_A"
    row = admin.execute("SELECT auth_config FROM insurance.integrations WHERE slug = 'PROVIDER_A'").fetchone()
    assert row["auth_config"]["apiKey"] == "very-secret-key"
    shown = cli("integrations", "show")
    assert shown.returncode == 0 and "very-secret-key" not in shown.stdout and "s3" not in shown.stdout
    [mine] = [r for r in orjson.loads(shown.stdout) if r["slug"] == "PROVIDER_A"]
    assert mine["auth_config"] == {"baseUrl": "https://x.example", "apiKey": "***", "clientSecret": "***"}
    audit = admin.execute("SELECT actor, on_behalf_of, targets, result, details FROM insurance.audit_log "
                          "WHERE action = 'integrations.set' ORDER BY id DESC LIMIT 1").fetchone()
    assert audit == {"actor": f"cli:{getpass.getuser()}", "on_behalf_of": "ops@example.com",
                     "targets": ["PROVIDER_A"], "result": "ok",
                     "details": {"keys": ["apiKey", "baseUrl", "clientSecret"]}}, "keys, never values"
    assert cli("sandbox", "configure", sandbox).returncode == 0  # the session's providers again


def test_unknown_providers_and_unusable_configs_are_refused(admin):
    before = admin.execute("SELECT count(*) AS n FROM insurance.integrations").fetchone()["n"]
    for args, says in ((["set", "PROVIDER_Z", "--auth-config", '{"apiKey": "k"}'], "PROVIDER_Z' is not a provider"),
                       (["set", "PROVIDER_A", "--auth-config", '{"baseUrl": "https://x.example"}'], "apiKey is missing"),
                       (["set", "PROVIDER_B", "--auth-config", '{"baseUrl": "https://x.example"}'], "channels"),
                       (["set", "MAIL_PROVIDER", "--auth-config", '{"baseUrl": "ftp://x"}'], "MAIL_PROVIDER")):
        done = cli("integrations", *args)
        assert done.returncode == 2 and says in done.stderr, (args, done.stderr)
    assert admin.execute("SELECT count(*) AS n FROM insurance.integrations").fetchone()["n"] == before


def test_delete_forgets_a_provider_and_says_when_there_is_none(admin, sandbox):
    assert cli("sandbox", "configure", sandbox).returncode == 0
    done = cli("integrations", "delete", "mail_provider")
    assert done.returncode == 0, done.stderr
    assert admin.execute("SELECT count(*) AS n FROM insurance.integrations WHERE slug = 'MAIL_PROVIDER'"
                         ).fetchone()["n"] == 0
    again = cli("integrations", "delete", "MAIL_PROVIDER")
    assert again.returncode == 1 and "no provider configuration for MAIL_PROVIDER" in again.stderr
    results = [r["result"] for r in admin.execute(
        "SELECT result FROM insurance.audit_log WHERE action = 'integrations.delete' ORDER BY id DESC LIMIT 2")]
    assert results == ["INTEGRATION_NOT_FOUND", "ok"], "a refusal is audited too"
    assert cli("sandbox", "configure", sandbox).returncode == 0


def test_bad_arguments_exit_2():
    for args in (["set", "PROVIDER_A", "--auth-config", "{not json"], ["set", "PROVIDER_A", "--auth-config", "[]"],
                 ["set", "9BAD", "--auth-config", "{}"], ["sandbox", "configure", "ftp://x"]):
        done = cli(*args) if args[0] == "sandbox" else cli("integrations", *args)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, args
