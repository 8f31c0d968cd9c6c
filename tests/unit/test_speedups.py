"""The record path's compiled modules are in use where they were built, and never when
stale (their source edited since) or under ``STREAMS_PURE_PYTHON``."""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import runpy
import sys
from pathlib import Path

import pytest

import streams
from streams import speedups

REQUIRE_ENV = "STREAMS_REQUIRE_COMPILED"  # CI: a build without them is a failure
ROOT = Path(streams.__file__).parent.parent
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def _built(name: str) -> bool:
    found = importlib.machinery.PathFinder.find_spec(
        name, [str(ROOT / Path(*name.split(".")[:-1]))]
    )
    return found is not None and not (found.origin or "").endswith(".py")


def test_the_compiled_modules_are_in_use_where_built() -> None:
    modules = [importlib.import_module(name) for name in speedups.COMPILED]
    if os.environ.get(speedups.PURE_PYTHON_ENV):
        assert not any(speedups.compiled(m) for m in modules)
        return
    built = all(_built(name) for name in speedups.COMPILED)
    if not built and not os.environ.get(REQUIRE_ENV):
        pytest.skip("the record path's modules were not compiled here (no Cython or C compiler)")
    assert built, "setup.py did not compile every module of streams.speedups.COMPILED"
    assert [m.__name__ for m in modules if not speedups.compiled(m)] == []


def test_every_listed_module_has_its_source_where_setup_reads_the_list() -> None:
    listed = runpy.run_path(str(ROOT / "streams" / "speedups.py"))["COMPILED"]  # as setup.py
    assert listed == speedups.COMPILED
    assert [n for n in listed if not (ROOT / f"{n.replace('.', '/')}.py").is_file()] == []


@pytest.fixture
def copies(tmp_path: Path) -> tuple[Path, Path]:
    """A source and a compiled copy of ``streams.state.dedup`` in a folder of their own
    (the copy's bytes are never loaded: the finder only decides which file to import)."""
    source, built = tmp_path / "dedup.py", tmp_path / f"dedup{SUFFIX}"
    source.write_text("")
    built.write_bytes(b"")
    return source, built


def _imported(folder: Path) -> str | None:
    """What the finder has Python import for ``streams.state.dedup`` found in ``folder``:
    the source's path, or None (the finders after it decide: the compiled copy)."""
    spec = speedups._FINDER.find_spec("streams.state.dedup", [str(folder)])
    return None if spec is None else spec.origin


def test_a_fresh_compiled_copy_is_imported(
    copies: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    source, built = copies
    monkeypatch.delenv(speedups.PURE_PYTHON_ENV, raising=False)
    os.utime(source, (1_000, 1_000))
    os.utime(built, (2_000, 2_000))  # built after the source was written
    assert _imported(source.parent) is None


def test_a_compiled_copy_older_than_its_source_is_not(copies: tuple[Path, Path]) -> None:
    source, built = copies
    os.utime(built, (1_000, 1_000))
    os.utime(source, (2_000, 2_000))  # edited after the build
    assert _imported(source.parent) == str(source)


def test_pure_python_imports_every_source(
    copies: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    source, built = copies
    os.utime(source, (1_000, 1_000))
    os.utime(built, (2_000, 2_000))
    monkeypatch.setenv(speedups.PURE_PYTHON_ENV, "1")
    assert _imported(source.parent) == str(source)


def test_a_module_not_listed_or_not_built_is_left_to_python(
    copies: tuple[Path, Path],
) -> None:
    source, built = copies
    assert speedups._FINDER.find_spec("streams.state.memory", [str(source.parent)]) is None
    built.unlink()
    assert _imported(source.parent) is None  # only the source: Python imports it anyway


def test_a_compiled_copy_without_its_source_is_imported(
    copies: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    source, _built = copies
    source.unlink()
    monkeypatch.setenv(speedups.PURE_PYTHON_ENV, "1")  # no source to run instead
    assert _imported(source.parent) is None


def test_the_finder_asks_before_the_path_finder_once_streams_is_imported() -> None:
    speedups.install()  # again: still once
    assert sys.meta_path.count(speedups._FINDER) == 1
    assert sys.meta_path.index(speedups._FINDER) < sys.meta_path.index(
        importlib.machinery.PathFinder
    )
