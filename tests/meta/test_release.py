"""Released SQL is frozen: what a tag deployed is what a later deploy of that tag still runs.

After `sqitch tag vX`, a change at or before the tag changes only by `sqitch rework` (its
scripts are then copied to `<change>@vX.sql`, which keep the tagged text, and `<change>.sql` restates
the change). Editing a tagged script in place would make a database deployed from the tag and
one deployed from HEAD differ without sqitch knowing. CONTRIBUTING.md "Releasing".
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.release import Repo, frozen_script_problems, parse_plan, plan_tags

SQITCH_ENV = {"SQITCH_FULLNAME": "Release Test", "SQITCH_EMAIL": "release@insurance.invalid"}


def test_every_tagged_script_is_still_the_tagged_one():
    assert frozen_script_problems(ROOT) == []


def test_an_in_place_edit_of_a_tagged_script_of_this_repository_is_found(tmp_path):
    """The check above on a clone of this repository whose newest tag's first change was edited."""
    tags = plan_tags(parse_plan((ROOT / "sqitch.plan").read_text()))
    if not tags:
        pytest.skip("sqitch.plan has no release tag yet: nothing is frozen")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", Repo(ROOT).git("rev-parse", "HEAD").strip()],
                   check=True)
    assert frozen_script_problems(clone) == []
    first = next(e.name for e in parse_plan((clone / "sqitch.plan").read_text()) if not e.is_tag)
    script = clone / "sql" / "deploy" / f"{first}.sql"
    if not script.exists():  # reworked: its frozen copy is what the tag ran
        script = clone / "sql" / "deploy" / f"{first}@{tags[0]}.sql"
    script.write_text(script.read_text() + "\n-- edited in place\n")
    problems = frozen_script_problems(clone)
    # The first change is in every release: each tag finds the edit.
    assert len(problems) == len(tags), problems
    assert all(script.name in problem and "sqitch rework" in problem for problem in problems)


# The rule on a small project of its own: real git, real sqitch.

def _run(repo: Path, *args: str) -> str:
    return subprocess.run(args, cwd=repo, check=True, capture_output=True, text=True,
                          env={**os.environ, **SQITCH_ENV}).stdout


def _commit(repo: Path, message: str) -> None:
    _run(repo, "git", "add", "-A")
    _run(repo, "git", "-c", "user.name=Release Test", "-c", "user.email=release@insurance.invalid",
         "commit", "-q", "-m", message)


@pytest.fixture
def project(tmp_path) -> Path:
    """Two changes tagged v1 (plan and git), committed."""
    repo = tmp_path / "project"
    repo.mkdir()
    _run(repo, "git", "init", "-q")
    _run(repo, "sqitch", "init", "demo", "--engine", "pg", "--top-dir", "sql", "--plan-file", "sqitch.plan")
    for name in ("accounts", "ledger"):
        _run(repo, "sqitch", "add", name, "-n", f"the {name}")
        (repo / "sql" / "deploy" / f"{name}.sql").write_text(f"CREATE TABLE {name} (id int);\n")
    _commit(repo, "two changes")
    _run(repo, "sqitch", "tag", "v1", "-n", "release 1")
    _commit(repo, "release v1")
    _run(repo, "git", "tag", "v1")
    return repo


def _edit(path: Path) -> None:
    path.write_text(path.read_text() + "-- changed\n")


def test_a_tagged_project_untouched_has_no_problem(project):
    assert frozen_script_problems(project) == []


def test_an_in_place_edit_of_a_tagged_deploy_revert_or_verify_script_is_found(project):
    _edit(project / "sql" / "deploy" / "ledger.sql")
    _edit(project / "sql" / "verify" / "accounts.sql")
    problems = frozen_script_problems(project)
    assert len(problems) == 2  # in the plan's order
    assert "sql/verify/accounts.sql differs from sql/verify/accounts.sql as tagged v1" in problems[0]
    assert "sql/deploy/ledger.sql differs from sql/deploy/ledger.sql as tagged v1" in problems[1]
    assert "sqitch rework ledger" in problems[1]


def test_a_committed_edit_is_found_too(project):
    _edit(project / "sql" / "revert" / "accounts.sql")
    _commit(project, "edit in place")
    assert ["sql/revert/accounts.sql differs" in p for p in frozen_script_problems(project)] == [True]


def test_a_rework_keeps_the_tagged_text_in_the_frozen_copy(project):
    _run(project, "sqitch", "rework", "ledger", "-n", "ledger gains a column")
    _edit(project / "sql" / "deploy" / "ledger.sql")
    _commit(project, "rework ledger")
    assert (project / "sql" / "deploy" / "ledger@v1.sql").exists()
    assert frozen_script_problems(project) == []
    _edit(project / "sql" / "deploy" / "ledger@v1.sql")
    assert ["sql/deploy/ledger@v1.sql differs from sql/deploy/ledger.sql as tagged v1" in p
            for p in frozen_script_problems(project)] == [True]


def test_a_change_reworked_before_a_later_tag_is_checked_against_each_tag(project):
    _run(project, "sqitch", "rework", "ledger", "-n", "ledger gains a column")
    _edit(project / "sql" / "deploy" / "ledger.sql")
    _run(project, "sqitch", "tag", "v2", "-n", "release 2")
    _commit(project, "release v2")
    _run(project, "git", "tag", "v2")
    assert frozen_script_problems(project) == []
    _edit(project / "sql" / "deploy" / "ledger.sql")  # the v2 text, edited in place
    assert ["sql/deploy/ledger.sql differs from sql/deploy/ledger.sql as tagged v2" in p
            for p in frozen_script_problems(project)] == [True]


def test_without_the_git_tag_the_release_is_the_commit_that_added_it_to_the_plan(project):
    _run(project, "git", "tag", "-d", "v1")
    _run(project, "git", "commit", "-q", "--allow-empty", "-m", "later",
         "--author", "Release Test <release@insurance.invalid>")
    assert frozen_script_problems(project) == []
    _edit(project / "sql" / "deploy" / "accounts.sql")
    assert ["sql/deploy/accounts.sql differs" in p for p in frozen_script_problems(project)] == [True]


def test_a_release_that_no_commit_holds_is_reported(project):
    shutil.rmtree(project / ".git")
    _run(project, "git", "init", "-q")
    _commit(project, "history lost")
    (project / "sqitch.plan").write_text((project / "sqitch.plan").read_text()
                                         .replace("@v1 ", "@v1-lost ", 1))
    problems = frozen_script_problems(project)
    assert len(problems) == 1 and "@v1-lost: no git tag" in problems[0]


def test_a_git_tag_that_the_plan_does_not_name_or_end_with_is_reported(project):
    _run(project, "git", "tag", "v9")
    assert frozen_script_problems(project) == ["git tag v9 names no tag of sqitch.plan"]
    _run(project, "git", "tag", "-d", "v9")
    _run(project, "sqitch", "add", "audit", "-n", "after the tag")
    _commit(project, "a new change")
    _run(project, "git", "tag", "-f", "v1")  # moved onto a commit with a change after @v1
    assert frozen_script_problems(project) == ["git tag v1: its commit's sqitch.plan does not end with @v1"]
