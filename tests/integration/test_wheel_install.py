"""The wheel works on its own: built as ``make dist`` builds it, installed with pip into a
new virtualenv in an empty folder outside the repository, ``streams demo`` passes there
(the steps that run the shipped example topologies on its core dependencies: a topology
and its schemas, RocksDB state, async steps, replay; ``test_demo`` runs the whole tour).

The wheel is ``compose/image/wheel.sh``'s: built from a copy of the files that go into it
(the repository's ``build/`` and ``dist/`` stay untouched) and cached by a hash of them, the
same wheel the app image of ``compose/image/build.sh`` installs, so the suite compiles the
record path once for both, and not at all when the sources have not changed since the last
build. Dependencies come from PyPI through pip's cache. Only the core dependencies are
installed, so this also proves the demo and the commands need no extra. About a minute
past the build: install ~10 s, demo steps ~25 s. Every folder it makes is removed
afterwards (the cached wheel stays).
"""

from __future__ import annotations

import importlib.machinery
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from streams import speedups

ROOT = Path(__file__).resolve().parents[2]
WHEEL_SH = ROOT / "compose" / "image" / "wheel.sh"
WHEEL_STEPS = "topology,state,concurrency,replay"

pytestmark = pytest.mark.timeout(900)


@dataclass
class Installed:
    wheel: Path
    venv: Path
    empty: Path  # an empty folder outside the repository, the commands' cwd
    home: Path
    timings: dict[str, float]

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        """``streams ARGS`` from the venv, in the empty folder, with a bare environment:
        nothing of the repository (PATH, PYTHONPATH, the schemas folder) leaks in."""
        environ = {
            "PATH": f"{self.venv / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin",
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "COLUMNS": "120",
            **env,
        }
        return subprocess.run(
            [str(self.venv / "bin" / args[0]), *args[1:]],
            cwd=self.empty,
            env=environ,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )


def _check(cmd: list[str], cwd: Path | None = None) -> None:
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"{' '.join(cmd)}:\n{result.stdout}\n{result.stderr}"


def project_wheel() -> Path:
    """The wheel of the tree as it is: ``make dist``'s command (an isolated build,
    setuptools and Cython from PyPI) run by ``wheel.sh``, or its cached result. Two test
    workers asking at once (this and the app image's build) wait for one build."""
    env = {**os.environ, "PYTHON": sys.executable}
    result = subprocess.run(
        ["bash", str(WHEEL_SH)], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 0, result.stderr
    return Path(result.stdout.strip())


@pytest.fixture(scope="module")
def installed() -> Iterator[Installed]:
    timings: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="streams-wheel-") as tmp:
        base = Path(tmp)
        venv, empty, home = base / "venv", base / "empty", base / "home"
        for folder in (empty, home):
            folder.mkdir()

        started = time.monotonic()
        wheel = project_wheel()
        timings["wheel build (or cached)"] = time.monotonic() - started

        started = time.monotonic()
        pip = [sys.executable, "-m", "pip"]
        # No pip inside the venv (ensurepip takes seconds): this pip installs into it.
        _check([sys.executable, "-m", "venv", "--without-pip", str(venv)])
        _check([*pip, "--python", str(venv / "bin" / "python"), "install", "-q", str(wheel)])
        timings["venv install"] = time.monotonic() - started

        yield Installed(wheel, venv, empty, home, timings)
        print("timings:", ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))


def test_the_wheel_carries_the_examples_and_the_compiled_modules(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    for example in (ROOT / "topology").glob("*.py"):
        assert f"streams/examples/topology/{example.name}" in names
    for schema in (ROOT / "schemas").rglob("*"):
        if schema.is_file():
            relative = schema.relative_to(ROOT / "schemas").as_posix()
            assert f"streams/examples/schemas/{relative}" in names
    assert "streams/py.typed" in names
    assert not [n for n in names if n.startswith(("tests/", "topology/", "schemas/"))]
    if os.environ.get("STREAMS_REQUIRE_COMPILED") == "1":  # CI: the C compiler is there
        # Every module streams.speedups lists has its compiled copy beside its source.
        suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
        missing = [
            name
            for name in speedups.COMPILED
            if f"{name.replace('.', '/')}{suffix}" not in names
            or f"{name.replace('.', '/')}.py" not in names
        ]
        assert missing == [], sorted(names)


def test_the_installed_package_is_the_wheel_and_needs_no_extra(installed: Installed) -> None:
    code = "import streams, streams.testing, streams.demo.runner; print(streams.__file__)"
    result = installed.run("python", "-c", code)
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()).is_relative_to(installed.venv)


def test_help_and_a_missing_schemas_folder_from_an_empty_folder(installed: Installed) -> None:
    helped = installed.run("streams", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "Usage: streams" in helped.stdout
    assert "demo" in helped.stdout

    listed = installed.run("streams", "schemas", "list")
    assert listed.returncode == 1
    lines = listed.stderr.strip().splitlines()
    assert len(lines) == 1, listed.stderr
    assert lines[0].startswith(f"error: no schemas folder at {installed.empty / 'schemas'}")


def test_the_demo_passes_from_the_installed_wheel(
    installed: Installed, kafka_bootstrap: str
) -> None:
    started = time.monotonic()
    result = installed.run(
        "streams",
        "demo",
        "--only",
        WHEEL_STEPS,
        KAFKA_BOOTSTRAP_SERVERS=kafka_bootstrap,
        STREAMS_STATE_DIR=str(installed.home / "state"),
    )
    installed.timings["demo"] = time.monotonic() - started
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "demo done" in result.stdout
    assert not list(installed.empty.iterdir()), "the demo wrote into the current folder"
