"""Issue 42: the contract kit run against a running stack's database (as docs/adapters.md once
suggested) pointed every insurer at the tests' sandbox, which then went away, and left abandoned
test emissions in the stack's back-office. Now the tests refuse a database no test run made,
before changing anything.

Here the session's own database plays the running stack's: its "made for tests" comment is taken
away for the length of the test (pytest runs one test at a time), the kit's fault tests and the
in-process kit run against it in a child pytest, and the stack's providers, outbox and emissions
must be as they were.
"""
from __future__ import annotations

import subprocess
import sys

from psycopg import sql

from tests import throwaway
from tests.conftest import ROOT, child_environ

KIT = ["tests/integrations/test_contract_kit_faults.py", "tests/orchestrator/test_contract_kit.py"]


def snapshot(admin) -> dict:
    """What a running stack's operator would see change."""
    return {
        "providers": admin.execute("SELECT slug, auth_config::text AS auth_config, updated_at FROM insurance.integrations "
                                   "ORDER BY slug").fetchall(),
        "risk items": admin.execute("SELECT count(*) AS n FROM insurance.risk_items").fetchone()["n"],
        "emissions": admin.execute("SELECT status, count(*) AS n FROM insurance.integration_emissions "
                                   "GROUP BY status ORDER BY status").fetchall(),
        "outbox waiting": admin.execute("SELECT count(*) AS n FROM outbox.http_requests "
                                        "WHERE delivered_at IS NULL AND dead_at IS NULL").fetchone()["n"],
    }


def test_the_kit_leaves_a_running_stacks_database_as_it_was(admin, make_risk_item, make_package):
    # The stack has work in hand: a policy whose emission waits in the outbox.
    make_risk_item(package=make_package(sales="PROVIDER_A"), holder_email="stack@example.com")
    name = sql.Identifier(admin.info.dbname)
    admin.execute(sql.SQL("COMMENT ON DATABASE {} IS NULL").format(name))
    try:
        before = snapshot(admin)
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *KIT,
                               "-k", "PROVIDER_A and (timeout or each_variant)"],
                              cwd=ROOT, env=child_environ(), capture_output=True, text=True, timeout=600)
        after = snapshot(admin)
    finally:
        admin.execute(sql.SQL("COMMENT ON DATABASE {} IS {}").format(name, sql.Literal(throwaway.MARK)))
    out = done.stdout + done.stderr
    assert after == before, "the running stack's providers, items, emissions and outbox are as they were"
    assert done.returncode != 0 and "refusing to" in out and "no test run made it" in out, out[-3000:]
