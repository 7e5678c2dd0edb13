"""The docs index lists every page, and every relative link in the docs leads to a file that exists."""

from __future__ import annotations

import re

from tests.conftest import REPO

LINK = re.compile(r"\]\((?!https?://|#|mailto:)([^)#\s]+)")


def test_the_docs_index_lists_every_page():
    index = (REPO / "docs" / "README.md").read_text(encoding="utf-8")
    listed = set(LINK.findall(index))
    pages = {path.name for path in (REPO / "docs").glob("*.md") if path.name != "README.md"}
    assert pages - listed == set()


def test_every_relative_link_in_the_docs_resolves():
    broken = [
        (page.relative_to(REPO).as_posix(), target)
        for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
        for target in LINK.findall(page.read_text(encoding="utf-8"))
        if not (page.parent / target).exists()
    ]
    assert broken == []
