"""The README is the front page: short, and every link in it lands on a page that exists.

``make docs`` (mkdocs --strict) checks the links inside the site; this checks the README,
which mkdocs does not build: its relative links resolve, and those into ``docs/`` name
pages of the site's nav (so they exist on the site, not only in the repository).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
README_MAX_BYTES = 10 * 1024  # issue #13: the front page stays at most 10 KB

# [text](target) with a relative target (no scheme, no bare #anchor)
_LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:|#)([^)\s]+)\)")
# nav entries of mkdocs.yml: "- page.md" or "- Title: page.md"
_NAV_PAGE = re.compile(r"^\s*- (?:[^:\n]+: )?([\w./-]+\.md)\s*$", re.MULTILINE)


def readme_links() -> list[str]:
    return _LINK.findall(README.read_text())


def nav_pages() -> set[str]:
    return set(_NAV_PAGE.findall((ROOT / "mkdocs.yml").read_text()))


def test_readme_is_at_most_10_kb() -> None:
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes; move detail to docs/"


def test_readme_links_resolve_to_files() -> None:
    links = readme_links()
    assert links, "the README links to the docs"
    missing = [link for link in links if not (ROOT / link.split("#")[0]).exists()]
    assert missing == []


def test_readme_links_into_docs_are_pages_of_the_site() -> None:
    pages = nav_pages()
    into_docs = [link.split("#")[0] for link in readme_links() if link.startswith("docs/")]
    assert into_docs
    off_site = [link for link in into_docs if link.removeprefix("docs/") not in pages]
    assert off_site == []


def test_every_page_in_the_nav_exists() -> None:
    pages = nav_pages()
    assert {"index.md", "getting-started.md", "cli.md", "api/streams.md"} <= pages
    assert sorted(p for p in pages if not (ROOT / "docs" / p).is_file()) == []
