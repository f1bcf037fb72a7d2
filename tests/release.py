"""Releases as git and sqitch see them: the plan's tags, the commit of each, its files.

A release is a sqitch tag in `sqitch.plan` (`@v0.9.0 ...`) and a git tag of the same name on the
commit that added it. A clone may come without git tags (CI clones a branch), so a tag resolves
to its git tag when there is one, else to the first commit whose plan holds the tag's line.
Used by tests/meta/test_release.py (tagged scripts are frozen) and tests/system/test_upgrade.py.
"""
from __future__ import annotations

import io
import re
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

SCRIPT_KINDS = ("deploy", "revert", "verify")
_TAG_LINE = re.compile(r"^@(\S+)\s")
_CHANGE_LINE = re.compile(r"^([A-Za-z0-9_][^\s\[@:]*)\s")


@dataclass(frozen=True)
class Entry:
    """One line of a plan: a change (one instance of it) or a tag."""
    name: str
    is_tag: bool


def parse_plan(text: str) -> list[Entry]:
    entries = []
    for line in text.splitlines():
        if not line.strip() or line.startswith(("%", "#")):
            continue
        if match := _TAG_LINE.match(line):
            entries.append(Entry(match.group(1), True))
        elif match := _CHANGE_LINE.match(line):
            entries.append(Entry(match.group(1), False))
    return entries


def plan_tags(entries: list[Entry]) -> list[str]:
    return [e.name for e in entries if e.is_tag]


def script_names(entries: list[Entry]) -> list[tuple[int, str, str]]:
    """(position, change, file stem) of every change instance, as sqitch names its scripts: an
    instance that is reworked later in the plan reads `change@<the first tag after it>`, the
    last instance of a change reads `change`."""
    out = []
    for i, entry in enumerate(entries):
        if entry.is_tag:
            continue
        reworked_later = any(not e.is_tag and e.name == entry.name for e in entries[i + 1:])
        stem = entry.name
        if reworked_later:
            tag = next(e.name for e in entries[i + 1:] if e.is_tag)
            stem = f"{entry.name}@{tag}"
        out.append((i, entry.name, stem))
    return out


class Repo:
    """git as read-only plumbing over one repository (a path inside its work tree)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def git(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(["git", "-C", str(self.root), *args], capture_output=True, text=True)
        if check and done.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def show(self, commit: str, path: str) -> bytes | None:
        done = subprocess.run(["git", "-C", str(self.root), "show", f"{commit}:{path}"], capture_output=True)
        return done.stdout if done.returncode == 0 else None

    def git_tags(self) -> list[str]:
        return self.git("tag", "--list", "v*").split()

    def tag_commit(self, tag: str) -> str | None:
        """The commit of release `tag`: its git tag, else the first commit whose sqitch.plan
        has the line `@<tag> ...` (git log -S finds the commits that change its count)."""
        ref = self.git("rev-parse", "-q", "--verify", f"refs/tags/{tag}^{{commit}}", check=False).strip()
        if ref:
            return ref
        for commit in self.git("log", "--reverse", "--format=%H", "-S", f"@{tag} ", "--", "sqitch.plan",
                               check=False).split():
            plan = self.show(commit, "sqitch.plan") or b""
            if tag in plan_tags(parse_plan(plan.decode())):
                return commit
        return None

    def export(self, commit: str, dest: Path, *paths: str) -> None:
        """The files of `commit` (all, or `paths`) written under dest, as `git archive | tar -x`."""
        archive = subprocess.run(["git", "-C", str(self.root), "archive", "--format=tar", commit, *paths],
                                 capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(dest, filter="data")


def frozen_script_problems(root: Path) -> list[str]:
    """Every way the work tree's scripts differ from what a release tagged: for each tag of the
    plan and each change instance at or before it, the script sqitch runs for that instance
    today must be byte for byte the one it ran at the tag. Also: every git tag `v*` names a tag
    of the plan, on a commit whose plan ends with it."""
    repo = Repo(root)
    entries = parse_plan((root / "sqitch.plan").read_text())
    problems = []
    for tag in plan_tags(entries):
        commit = repo.tag_commit(tag)
        if commit is None:
            problems.append(f"@{tag}: no git tag {tag} and no commit whose sqitch.plan has it "
                            "(a shallow clone? fetch the history)")
            continue
        tagged_entries = parse_plan(repo.show(commit, "sqitch.plan").decode())
        tagged_end = next(i for i, e in enumerate(tagged_entries) if e.is_tag and e.name == tag)
        tagged_stems = [s for s in script_names(tagged_entries) if s[0] < tagged_end]
        end = next(i for i, e in enumerate(entries) if e.is_tag and e.name == tag)
        now_stems = [s for s in script_names(entries) if s[0] < end]
        if [c for _, c, _ in now_stems] != [c for _, c, _ in tagged_stems]:
            problems.append(f"@{tag}: the changes before it are not those of its commit {commit[:12]}")
            continue
        for (_, change, now_stem), (_, _, then_stem) in zip(now_stems, tagged_stems):
            for kind in SCRIPT_KINDS:
                then = repo.show(commit, f"sql/{kind}/{then_stem}.sql")
                path = root / "sql" / kind / f"{now_stem}.sql"
                now = path.read_bytes() if path.exists() else None
                if then is None and now is None:
                    continue
                if now != then:
                    what = "is missing" if now is None else "differs from"
                    problems.append(f"sql/{kind}/{now_stem}.sql {what} sql/{kind}/{then_stem}.sql as tagged "
                                    f"{tag} ({commit[:12]}): change it with `sqitch rework {change}`")
    plan_tag_names = set(plan_tags(entries))
    for tag in repo.git_tags():
        if tag not in plan_tag_names:
            problems.append(f"git tag {tag} names no tag of sqitch.plan")
            continue
        tagged = parse_plan((repo.show(f"refs/tags/{tag}", "sqitch.plan") or b"").decode())
        if not tagged or tagged[-1] != Entry(tag, True):
            problems.append(f"git tag {tag}: its commit's sqitch.plan does not end with @{tag}")
    return problems
