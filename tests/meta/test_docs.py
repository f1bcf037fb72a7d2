"""The README is the front door (issue 21): short enough to read in the first hour, with the
reference in docs/, and every link among them leads somewhere."""
from __future__ import annotations

import re

from tests.conftest import ROOT


def test_the_readme_is_a_front_door():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    for must in ("make run", "make test", "<!-- walkthrough:start -->", ".venv/bin/python -m app", "## Architecture"):
        assert must in readme, must
    for doc in ("docs/configuration.md", "docs/api.md", "docs/operations.md", "docs/benchmarks.md",
                "docs/architecture.md", "docs/sql-reference.md"):
        assert f"]({doc})" in readme, f"README does not link {doc}"


def test_every_relative_link_of_the_docs_leads_to_a_file_and_a_heading():
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        for target in re.findall(r"\]\(([^)#:\s]*)(#[^)\s]*)?\)", page.read_text()):
            path, anchor = target
            file = (page.parent / path).resolve() if path else page
            assert file.exists(), f"{page.name} links {path}, which does not exist"
            if anchor and file.suffix == ".md":
                headings = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                            for h in re.findall(r"^#+ (.*)$", file.read_text(), re.MULTILINE)}
                assert anchor[1:] in headings, f"{page.name} links {path}{anchor}: no such heading"


def test_the_docs_point_only_inside_the_repository():
    """Issue 30: README linked ../shared/... and docs/ cited "DESIGN.md §5", which a reader of the
    repository does not have. Every path a page names (a link or a `code` path) stays inside."""
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    if (ROOT / "CHANGELOG.md").exists():
        pages.append(ROOT / "CHANGELOG.md")
    for page in pages:
        text = page.read_text()
        assert not re.search(r"\b(DESIGN|STYLE)\.md\b", text), f"{page.name} cites a document outside the repository"
        for path in re.findall(r"\]\(([^)#\s]+)", text) + re.findall(r"`(\.\./[^`\s]+)`", text):
            if re.match(r"^[a-z]+:", path):
                continue  # a URL, not a path
            resolved = (page.parent / path).resolve()
            assert resolved.is_relative_to(ROOT), f"{page.name} points outside the repository: {path}"


def test_the_readme_says_what_the_walkthrough_does_with_the_back_office():
    """Issue 42: the README said the walkthrough "opens" the back-office; it prints the link."""
    readme = (ROOT / "README.md").read_text()
    said, block = readme.split("<!-- walkthrough:start -->")[0], readme.split("<!-- walkthrough:start -->")[1]
    intro = " ".join(said.split("## A newcomer's first ten minutes")[1].split())
    assert "opens the back-office" not in intro
    assert "prints the back-office link" in intro
    assert 'echo "now open $API/backoffice' in block, "the block prints the link, as the README says"
