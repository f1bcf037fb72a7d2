"""`python -m app adapters new SLUG`: what it writes is registered, served by the sandbox and
passes the contract kit before anyone edits it (in a temporary copy of the code)."""
from __future__ import annotations

import re
import shlex
import subprocess
import sys

import orjson
import pytest

from app.orchestrator.scaffold import hints
from tests.conftest import ROOT, child_environ
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


ADAPTERS_DOC = ROOT / "docs" / "adapters.md"


def test_the_scaffold_prints_the_steps_the_doc_gives():
    """Issue 42: the scaffold's hint named another command than docs/adapters.md."""
    doc = ADAPTERS_DOC.read_text()
    steps = hints("PROVIDER_D")
    assert f"```sh\n{steps['test']}\n```" in doc, steps["test"]
    assert " ".join(steps["then"].split()) in " ".join(doc.split()), steps["then"]


def test_the_docs_commands_run_as_written_without_any_environment(tmp_path, admin):
    """Issue 42: docs/adapters.md's test command failed as written (KeyError: 'ADMIN_DATABASE_URL').
    In a copy: the doc's scaffold command, then its test command with no DATABASE_URL: the tests
    deploy a database of their own (with no "already exists" notice in the deploy's output),
    pass, and drop it."""
    doc = ADAPTERS_DOC.read_text()
    commands = re.findall(r"```sh\n(.*?)\n```", doc, re.DOTALL)
    scaffold = next(line.split("#")[0].strip() for c in commands for line in c.splitlines()
                    if "adapters new PROVIDER_D" in line)
    test = next(c for c in commands if c.startswith(".venv/bin/pytest tests/orchestrator/test_contract_kit.py"))
    copy = copy_repo(tmp_path / "repo")
    env = {k: v for k, v in child_environ().items() if k not in ("DATABASE_URL", "ADMIN_DATABASE_URL",
                                                                  "DATABASE_LISTEN_URL")}

    def run(command: str) -> subprocess.CompletedProcess:
        args = shlex.split(command)
        program = {".venv/bin/python": [sys.executable], ".venv/bin/pytest": [sys.executable, "-m", "pytest"]}[args[0]]
        return subprocess.run([*program, *args[1:]], cwd=copy, env=env, capture_output=True, text=True, timeout=900)

    made = run(scaffold)
    assert made.returncode == 0, made.stderr
    assert orjson.loads(made.stdout)["test"] == test, "the scaffold prints the doc's command"
    before = {r["datname"] for r in admin.execute("SELECT datname FROM pg_database").fetchall()}
    kit = run(test)
    out = kit.stdout + kit.stderr
    assert kit.returncode == 0, out[-4000:]
    assert re.search(r"(\d+) passed", kit.stdout) and "deploying a throwaway database" in out, out[-2000:]
    assert "already exists" not in out and "NOTICE" not in out, "the deploy says only what matters"
    after = {r["datname"] for r in admin.execute("SELECT datname FROM pg_database").fetchall()}
    assert not {d for d in after - before if d.startswith("insurance_pytest_")}, "its database is dropped"
