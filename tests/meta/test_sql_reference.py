"""docs/sql-reference.md is what `make sql-reference` builds from the deployed catalog."""
from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import ROOT


def _generator():
    spec = importlib.util.spec_from_file_location("sql_reference", ROOT / "scripts" / "sql_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_sql_reference_is_the_catalogs(admin):
    reference = _generator()
    generated = reference.generate(admin)
    committed = reference.OUTPUT.read_text() if reference.OUTPUT.exists() else ""
    if committed != generated:
        pytest.fail(f"docs/sql-reference.md differs from the deployed catalog: run `{reference.COMMAND}` "
                    f"and commit the result.\n{reference.diff(committed, generated)}", pytrace=False)


def test_the_reference_says_what_a_dba_needs(admin):
    text = _generator().generate(admin)
    # One known function, as the catalog has it: signature, result, who runs it, who may call it.
    line = next(line for line in text.splitlines() if line.startswith("| `insurance.require_role("))
    assert "`insurance.require_role(VARIADIC _allowed text[])` | `void` | caller | PUBLIC |" in line
    # Where each object is created: a DBA opens that file.
    assert "| `sql/deploy/insurance_identity.sql` |" in line
    assert "- `insurance.risk_items` (`sql/deploy/risk_items.sql`):" in text
    assert "  - policy `risk_items_select_holder` (`sql/deploy/risk_items_holder_policies.sql`): SELECT to insurance_holder" in text
    assert "  - index `risk_items_policy_uid_lower_idx` (`sql/deploy/risk_items.sql`):" in text
    assert "  - trigger `risk_items_documents_insert` (`sql/deploy/risk_item_documents.sql`): AFTER INSERT ON" in text
    assert "_(no deploy file of the plan)_" not in text
    assert "## insurance" in text
    # Nothing that an extension brought (pgTAP is installed in the test database).
    assert "`public.plan(" not in text and "pgcrypto" not in text
