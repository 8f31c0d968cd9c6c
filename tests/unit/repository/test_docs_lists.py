"""The docs list what there is: every extra of ``pyproject.toml`` in the install table of
the getting-started page, every example topology in the topologies guide; the topologies
guide's ``load_topology`` snippet runs."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from streams.examples import example_names

ROOT = Path(__file__).resolve().parents[3]


def _first_column(page: str) -> set[str]:
    """The backquoted names in the first column of a page's tables."""
    return set(re.findall(r"^\| `([\w.]+)` \|", (ROOT / "docs" / page).read_text(), re.M))


def test_the_install_table_lists_every_extra() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert set(extras["optional-dependencies"]) <= _first_column("getting-started.md")


def test_the_topologies_guide_lists_every_example() -> None:
    listed = _first_column("guides/topologies.md")
    assert {f"{name}.py" for name in example_names()} <= listed


def test_the_topologies_guide_shows_load_topology_with_params(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page = (ROOT / "docs" / "guides" / "topologies.md").read_text()
    (snippet,) = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "params=" in b]
    monkeypatch.chdir(ROOT)  # the snippet's paths are the repository's
    namespace: dict[str, Any] = {}
    exec(snippet, namespace)  # the guide's own code, as a reader runs it
    accounts = namespace["accounts"]
    assert (accounts.app_id, accounts.topics_read) == ("accounts", ["accounts"])
