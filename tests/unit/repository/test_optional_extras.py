"""Core dependencies are what the core imports; the test kit loads without its extra.

The pytest plugin is loaded by every pytest session of anyone who installed Streams, and
``streams demo`` uses the test kit: neither may need testcontainers or docker (the
``testing`` extra). A fresh venv per test would cost a minute, so the child interpreters
here block those packages instead (``sys.modules[name] = None`` makes importing them raise
ImportError, as when they are not installed).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from importlib.metadata import distribution, packages_distributions
from pathlib import Path

import pytest

import streams

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = Path(streams.__file__).parent
INSTALL = "pip install 'streams[testing]'"

# Imported at module level by modules that only the named tool loads.
LOADED_BY_ITS_TOOL = {"streams/testing/plugin.py": {"pytest"}}

# Packages (a folder) and modules (a file) that are an extra's: only ``pip install
# 'streams[<extra>]'`` makes them importable, so their module-level imports are that
# extra's (or core) dependencies. The core imports them lazily, inside a function.
EXTRA_PACKAGES = {
    "streams/faust/": "faust",
    "streams/observability/metrics.py": "metrics",
    "streams/observability/otel.py": "otel",
}


def _extra_of(relative: str) -> str | None:
    return next((x for prefix, x in EXTRA_PACKAGES.items() if relative.startswith(prefix)), None)


_BLOCK = "import sys\nfor _name in ('docker', 'testcontainers'):\n    sys.modules[_name] = None\n"


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match, requirement
    return _canonical(match.group())


def _pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _module_level_imports(path: Path) -> set[str]:
    """Top-level packages imported by statements at module level (not in a try, an if, or
    a function: those are the optional and lazy imports)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def _module_level_names(path: Path) -> set[str]:
    """The dotted names ``_module_level_imports`` found (``opentelemetry.trace.Link``)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _providers(names: set[str], top: str, candidates: list[str]) -> list[str]:
    """The distributions among ``candidates`` that hold what ``names`` import from the
    package ``top``: a namespace package (``opentelemetry``: api, sdk, semantic
    conventions) is split between several, and only the ones an import reaches count."""
    if len(candidates) == 1:
        return candidates
    files = {d: {str(f) for f in distribution(d).files or ()} for d in candidates}
    found: set[str] = set()
    for name in (n for n in names if n.split(".")[0] == top):
        parts = name.split(".")
        for size in range(len(parts), 1, -1):  # the longest prefix that is a module
            path = "/".join(parts[:size])
            holders = {
                d
                for d, held in files.items()
                if f"{path}.py" in held or f"{path}/__init__.py" in held
            }
            if holders:
                found |= holders
                break
        else:
            return candidates
    return sorted(found) or candidates


def test_core_dependencies_are_exactly_what_the_core_imports() -> None:
    distributions = packages_distributions()
    imported: dict[str, set[str]] = {}
    by_extra: dict[str, dict[str, set[str]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(("streams/examples/topology/", "streams/examples/schemas/")):
            continue  # the example topologies: scripts, run by path
        allowed = LOADED_BY_ITS_TOOL.get(relative, set())
        for module in _module_level_imports(path) - allowed - {"streams"}:
            if module in sys.stdlib_module_names:
                continue
            assert module in distributions, f"{relative} imports {module}: not installed"
            extra = _extra_of(relative)
            found = imported if extra is None else by_extra.setdefault(extra, {})
            for dist in _providers(_module_level_names(path), module, distributions[module]):
                found.setdefault(_canonical(dist), set()).add(relative)

    project = _pyproject()["project"]
    assert isinstance(project, dict)
    declared = {_requirement_name(r) for r in project["dependencies"]}
    for extra, dists in by_extra.items():
        allowed = declared | {_requirement_name(r) for r in project["optional-dependencies"][extra]}
        outside = {dist: sorted(where) for dist, where in dists.items() if dist not in allowed}
        assert not outside, f"imported by the {extra!r} extra's modules, not declared: {outside}"
    undeclared = {dist: sorted(where) for dist, where in imported.items() if dist not in declared}
    assert not undeclared, f"imported by the core but not a core dependency: {undeclared}"
    assert declared == set(imported), (
        f"core dependencies nothing imports: {declared - set(imported)}"
    )


def test_the_extras_a_user_and_a_developer_install() -> None:
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    extras = {
        name: {_requirement_name(r) for r in reqs}
        for name, reqs in project["optional-dependencies"].items()
    }
    assert {"testcontainers", "docker", "pytest"} <= extras["testing"]
    assert {"faust-streaming", "aiokafka"} <= extras["faust"]
    assert {"mkdocs", "mkdocs-material", "mkdocstrings-python", "mkdocs-click"} <= extras["docs"]
    # dev pulls in the other extras by name (streams[testing,registry,docs]).
    dev = project["optional-dependencies"]["dev"]
    assert any(re.fullmatch(r"streams\[testing,registry,docs\]", r) for r in dev), dev
    assert "streams[faust]" in dev, dev
    assert "streams[metrics]" in dev, dev
    assert "prometheus-client" in extras["metrics"]
    assert {"pytest-timeout", "hypothesis", "mypy", "ruff"} <= extras["dev"]


def _run(code: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("CI", "STREAMS_REQUIRE_DOCKER")}
    return subprocess.run(
        [sys.executable, "-c", _BLOCK + textwrap.dedent(code)],
        cwd=cwd,
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_test_kit_and_its_plugin_import_without_the_testing_extra(tmp_path: Path) -> None:
    result = _run(
        """
        import streams.testing, streams.testing.plugin, streams.demo.testing
        from streams.testing import TestDriver, wait_for_records, docker_unavailable_reason
        print("REASON", docker_unavailable_reason())
        try:
            from streams.testing import KafkaContainer
        except ImportError as exc:
            print("IMPORT", exc)
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert (
        f"REASON the Python packages docker and testcontainers are not installed: {INSTALL}"
        in lines
    )
    assert f"IMPORT KafkaContainer needs the package docker: {INSTALL}" in lines


_SUITE = """
def test_needs_a_container(kafka_container):
    raise AssertionError("must not run without the testing extra")

def test_in_memory():
    from streams.testing import TestDriver
"""

_SESSION = """
import pytest
raise SystemExit(pytest.main(["-p", "no:cacheprovider", "-rs", "test_suite.py"]))
"""


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "test_suite.py").write_text(_SUITE)
    return tmp_path


def test_container_fixtures_skip_saying_what_to_install(suite: Path) -> None:
    result = _run(_SESSION, suite)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 1 skipped" in result.stdout
    skipped = [line for line in result.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 1
    assert skipped[0].endswith(
        f"needs Docker: the Python packages docker and testcontainers are not installed: {INSTALL}"
    )


def test_container_fixtures_fail_without_the_extra_where_docker_is_required(suite: Path) -> None:
    result = _run(_SESSION, suite, STREAMS_REQUIRE_DOCKER="1")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 passed, 1 error" in result.stdout
    assert INSTALL in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
