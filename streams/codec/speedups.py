"""The hot codec modules compiled with Cython, when the package was built with them.

``varint``, ``envelope_wire`` and ``avro_machine`` are plain Python, and plain Python is
the contract: at install, ``setup.py`` also compiles each of them (its ``COMPILED`` lists
them), unchanged, into an extension module (``streams.codec._compiled_varint``, ...)
when Cython and a C compiler are there. At the end of
each plain module, ``use_compiled`` swaps in the compiled functions: the same code without
the interpreter's dispatch, about twice as fast (``read_fields`` 2.6 → 1.4 µs). Without
them, or with ``STREAMS_PURE_PYTHON=1``, the plain functions stay; the unit tests run both
and compare them.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path
from types import ModuleType
from typing import Any

PURE_PYTHON_ENV = "STREAMS_PURE_PYTHON"


def compiled_name(module: str) -> str:
    """``streams.codec.varint`` → ``streams.codec._compiled_varint``."""
    package, _, name = module.rpartition(".")
    return f"{package}._compiled_{name}"


def use_compiled(namespace: dict[str, Any]) -> bool:
    """Replace the functions of the module whose globals are ``namespace`` with their
    compiled copies; whether it did. A copy older than the source (the source was edited
    since the build) is stale and left alone."""
    name = namespace["__name__"]
    if name.rpartition(".")[2].startswith("_compiled_") or os.environ.get(PURE_PYTHON_ENV):
        return False  # the compiled copy itself runs this too
    try:
        compiled = importlib.import_module(compiled_name(name))
    except ImportError:
        return False
    source, built = Path(namespace["__file__"]), Path(compiled.__file__ or "")
    if built.stat().st_mtime < source.stat().st_mtime:
        return False
    namespace.update(
        (key, value)
        for key, value in vars(compiled).items()
        if callable(value) and getattr(value, "__module__", None) == compiled.__name__
    )
    return True


def plain_copy(module: ModuleType) -> ModuleType:
    """A fresh copy of ``module`` from its source, left uncompiled (no compiled copy goes
    by its name): what the tests compare a compiled module with."""
    name = f"{module.__package__}.plain_{module.__name__.rpartition('.')[2]}"
    spec = importlib.util.spec_from_file_location(name, module.__file__)
    assert spec is not None and spec.loader is not None
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    return copy
