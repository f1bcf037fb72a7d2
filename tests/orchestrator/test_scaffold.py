"""`python -m app adapters new SLUG`: what it writes is registered, served by the sandbox and
passes the contract kit before anyone edits it (in a temporary copy of the code)."""
from __future__ import annotations

import re

import orjson
import pytest

from tests.orchestrator.conftest import copy_repo, run_in


@pytest.mark.parametrize("auth, variants", [("api-key", "travel,health,home,lifestyle"), ("oauth2", "home")])
def test_a_new_adapter_passes_the_kit_as_written(auth, variants, tmp_path, admin, sandbox):
    copy = copy_repo(tmp_path / "repo")
    slug = f"KIT_NEW_{auth.replace('-', '_').upper()}"
    made = run_in(copy, admin, sandbox, "app", "adapters", "new", slug.lower(), "--auth", auth,
                  "--variants", variants, "--root", str(copy))
    assert made.returncode == 0, made.stderr
    module = slug.lower()
    assert orjson.loads(made.stdout)["written"] == [
        f"app/orchestrator/insurers/{module}.py", f"app/orchestrator/insurers/{module}.sandbox.json",
        f"tests/orchestrator/test_insurer_{module}.py"]
    listed = run_in(copy, admin, sandbox, "app", "adapters", "list")
    assert {"slug": slug, "variants": variants.split(","), "module": f"app.orchestrator.insurers.{module}"} in \
        orjson.loads(listed.stdout), "registered by being there"

    kit = run_in(copy, admin, sandbox, "pytest", "-q", "-p", "no:cacheprovider", "-rf",
                 "tests/orchestrator/test_contract_kit.py", f"tests/orchestrator/test_insurer_{module}.py",
                 "-k", f"{slug} or test_insurer_")
    assert kit.returncode == 0, kit.stdout[-3000:] + kit.stderr[-2000:]
    passed = int(re.search(r"(\d+) passed", kit.stdout).group(1))
    assert passed >= 10 + len(variants.split(",")), kit.stdout[-500:]  # the kit ran it, and its stub ran


def test_an_existing_insurer_is_refused_and_nothing_written(tmp_path, admin, sandbox):
    copy = copy_repo(tmp_path / "repo")
    before = sorted(p.name for p in (copy / "app/orchestrator/insurers").iterdir())
    again = run_in(copy, admin, sandbox, "app", "adapters", "new", "PROVIDER_A", "--root", str(copy))
    assert again.returncode == 2 and "PROVIDER_A exists already" in again.stderr
    assert sorted(p.name for p in (copy / "app/orchestrator/insurers").iterdir()) == before
    bad = run_in(copy, admin, sandbox, "app", "adapters", "new", "PROVIDER_Q", "--variants", "boat", "--root", str(copy))
    assert bad.returncode == 2 and "--variants must name some of" in bad.stderr
