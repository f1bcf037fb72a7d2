"""docs/privacy.md's map is what `make privacy-doc` writes from insurance.personal_data."""
from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import ROOT


def _generator():
    spec = importlib.util.spec_from_file_location("privacy_doc", ROOT / "scripts" / "privacy_doc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_map_is_the_declarations(admin):
    doc = _generator()
    committed = doc.OUTPUT.read_text()
    generated = doc.generate(admin, committed)
    if committed != generated:
        pytest.fail(f"docs/privacy.md differs from insurance.personal_data: run `{doc.COMMAND}` and commit the "
                    f"result.\n{doc.diff(committed, generated)}", pytrace=False)


def test_the_map_names_every_declared_place_with_its_rule(admin):
    text = _generator().section(admin)
    assert "| `insurance.beneficiaries` | `email` |  | contact | beneficiary | contract |" in text
    assert "| `insurance.postsales_otp` | `ip` |  | network address | holder | login code |" in text
    assert "| contract | while the policy is active, then POLICY_RETENTION" in text
