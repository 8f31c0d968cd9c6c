"""The example topologies are reachable from the package, and the demo stays the top layer.

``streams.examples`` finds the files of the top-level ``topology/`` folder (and the
``schemas/`` they are written against) from an editable install as from a wheel; the
wheel carries them because pyproject.toml's package data names them. Only the CLI may
import ``streams.demo``.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path, PurePosixPath

import pytest

import streams
from streams.examples import example_names, example_path, example_schemas
from streams.schemas import SCHEMAS_DIR_ENV
from streams.topology import Topology, load_topology
from streams.topology.nodes import StepKind

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = Path(streams.__file__).resolve().parent
EXAMPLES = [
    "accounts",
    "dedup",
    "digest",
    "enrich",
    "labels",
    "largest",
    "lookup",
    "mirror",
    "orders",
    "payments",
    "profiles",
    "quotes",
    "revenue",
    "shipping",
]
# Example apps of other frameworks, shipped alongside (not topologies): Faust interop.
OTHER_APPS = ["faust_shipping"]


def test_every_example_topology_is_found_by_name() -> None:
    assert example_names() == sorted(EXAMPLES + OTHER_APPS)
    for name in EXAMPLES + OTHER_APPS:
        path = example_path(name)
        assert path.is_file()
        assert path.samefile(ROOT / "topology" / f"{name}.py")
    assert example_schemas().samefile(ROOT / "schemas")


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_loads_as_a_topology_from_any_directory(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no ./schemas here: the shipped example schemas are used
    monkeypatch.setenv(SCHEMAS_DIR_ENV, str(example_schemas()))
    topology = load_topology(example_path(name))
    assert isinstance(topology, Topology)
    assert topology.app_id == name
    # quotes.py writes only replies, accounts.py keeps a projection read by queries
    keeps = any(step.kind in (StepKind.REPLY, StepKind.AGGREGATE) for step in topology.steps)
    assert topology.topics_written or keeps


@pytest.mark.parametrize("name", ["nope", "../topology/orders", "", "orders.py"])
def test_an_unknown_example_is_refused_with_the_names_there_are(name: str) -> None:
    with pytest.raises(
        LookupError,
        match="examples: accounts, dedup, digest, enrich, faust_shipping, labels, largest, lookup",
    ):
        example_path(name)


def test_the_wheel_ships_every_example_file() -> None:
    """Each file under topology/ (.py) and schemas/ matches a package-data pattern."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["streams"]
    files = [*(ROOT / "topology").glob("*.py"), *(p for p in (ROOT / "schemas").rglob("*"))]
    for file in (f for f in files if f.is_file()):
        folder = "topology" if file.is_relative_to(ROOT / "topology") else "schemas"
        inside = PurePosixPath("examples", folder, file.relative_to(ROOT / folder).as_posix())
        assert any(inside.match(p) for p in patterns if p.startswith("examples/")), inside


_DEMO = re.compile(r"^streams\.demo(\.|$)")


def _names_imported(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.append(node.value)  # importlib.import_module / lazy re-export tables
    return names


def test_nothing_below_the_cli_imports_the_demo() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        real = path.resolve()
        if not real.is_relative_to(PACKAGE):
            continue  # the example topologies: a symlink out of the package, not modules
        if real.is_relative_to(PACKAGE / "demo") or real.is_relative_to(PACKAGE / "cli"):
            continue
        tree = ast.parse(real.read_text(), filename=str(real))
        offenders += [f"{path}: {n}" for n in _names_imported(tree) if _DEMO.match(n)]
    assert not offenders
