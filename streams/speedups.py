"""The record path's modules compiled with Cython, when the package was built with them.

The modules in ``COMPILED`` are plain Python, and plain Python is the contract: at
install, ``setup.py`` also compiles each of them, unchanged, into an extension module of
the same name beside its source (``streams/pipeline/execute.cpython-311-x86_64-linux-gnu.so``
beside ``execute.py``), which Python then imports in its place: the same code without the
interpreter's dispatch (the codec's reads about twice as fast, ``read_fields`` 2.6 → 1.4
µs; ``streams run`` of ``topology/enrich.py`` 3.5% less CPU a record than with the codec
alone compiled). Without Cython or a C compiler the package installs as plain Python.

``install`` (run by ``import streams``, before any of them is imported) puts a finder
first on ``sys.meta_path`` that imports a module's source instead of its compiled copy
when the copy is stale (older than the source: edited since the build) or when
``STREAMS_PURE_PYTHON=1``. The unit tests run the compiled modules and compare the
codec's with their plain copies (``plain_copy``); ``STREAMS_PURE_PYTHON=1`` runs them all
as plain Python.

Only the standard library here: ``setup.py`` reads ``COMPILED`` from this file.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from types import ModuleType

PURE_PYTHON_ENV = "STREAMS_PURE_PYTHON"

COMPILED = (
    # the codec, with C types declared beside two of them (``varint.pxd``, ``avro_machine.pxd``)
    "streams.codec.varint",
    "streams.codec.envelope_wire",
    "streams.codec.avro_machine",
    "streams.codec.avro",
    "streams.envelope",
    # what each record goes through in the loop
    "streams.runtime.runner",
    "streams.runtime.stall",
    "streams.pipeline.record",
    "streams.pipeline.step",
    "streams.pipeline.offsets",
    "streams.pipeline.failure",
    "streams.pipeline.execute",
    "streams.pipeline.decode",
    "streams.pipeline.produce",
    "streams.pipeline.commit",
    "streams.topology.execution.plan",
    "streams.topology.execution.stateless",
    "streams.topology.execution.dedup",
    "streams.topology.execution.process",
    # the stores a step reads and writes, and their changelog
    "streams.state.routed",
    "streams.state.dedup",
    "streams.state.transaction",
    "streams.state.store",
    "streams.state.rocksdb",
)
"""The modules ``setup.py`` compiles: those every record of a topology runs through."""


def compiled(module: ModuleType) -> bool:
    """Whether ``module`` is its compiled copy (else its source runs)."""
    return not (module.__file__ or "").endswith(".py")


def _source(file: str, name: str) -> Path:
    """The source of module ``name`` beside ``file``, its compiled copy or the source itself."""
    return Path(file).with_name(f"{name.rpartition('.')[2]}.py")


class _StaleOrPure(MetaPathFinder):
    """Imports the source of a compiled module whose copy is stale, or of every one under
    ``STREAMS_PURE_PYTHON``; leaves every other import to the finders after it."""

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name not in _NAMES:
            return None
        found = PathFinder.find_spec(name, path)
        if found is None or found.origin is None or found.origin.endswith(".py"):
            return None  # not built: the source is what Python imports anyway
        built, source = Path(found.origin), _source(found.origin, name)
        if not source.is_file():
            return None  # installed without its source: the compiled copy is all there is
        pure = bool(os.environ.get(PURE_PYTHON_ENV))
        if not pure and built.stat().st_mtime >= source.stat().st_mtime:
            return None  # fresh: Python imports the compiled copy
        return importlib.util.spec_from_file_location(name, source)


_NAMES = frozenset(COMPILED)
_FINDER = _StaleOrPure()


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def plain_copy(module: ModuleType) -> ModuleType:
    """A fresh copy of ``module`` run from its source (``package.plain_<name>``): what the
    tests compare a compiled module with."""
    source = _source(module.__file__ or "", module.__name__)
    name = f"{module.__package__}.plain_{source.stem}"
    spec = importlib.util.spec_from_file_location(name, source)
    assert spec is not None and spec.loader is not None
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    return copy
