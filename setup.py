"""Optional Cython build of the hot codec modules (see ``streams/codec/speedups.py``).

Everything else is in ``pyproject.toml``. Each module in ``COMPILED`` is compiled,
unchanged, into ``streams.codec._compiled_<name>``; without Cython or a C compiler (or
with ``STREAMS_PURE_PYTHON=1``) the package installs as plain Python and says so once.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

COMPILED = ("varint", "envelope_wire", "avro_machine")  # modules of streams.codec that call use_compiled


def _skip(why: object) -> None:
    print(f"streams: codec modules stay plain Python ({why})", file=sys.stderr)


def extensions() -> list[Any]:
    if os.environ.get("STREAMS_PURE_PYTHON"):
        return []
    try:
        from Cython.Build import cythonize  # noqa: PLC0415 - only when building
    except ImportError as exc:
        _skip(exc)
        return []
    modules = [
        Extension(f"streams.codec._compiled_{name}", [f"streams/codec/{name}.py"])
        for name in COMPILED
    ]
    # annotation_typing off: Cython would read the annotations as C types (a float
    # accepted as an int, a str subclass or a bytearray refused): the compiled copy must do
    # exactly what the plain module does. build_dir keeps the generated C out of the tree;
    # force: cythonize would keep C generated earlier under other directives.
    return list(
        cythonize(
            modules,
            language_level=3,
            compiler_directives={"annotation_typing": False},
            build_dir="build/cython",
            force=True,
            quiet=True,
        )
    )


class OptionalBuildExt(build_ext):
    """A failed compilation leaves the plain modules in use instead of failing the install."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler, no Python headers: the platform's errors
            _skip(exc)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            _skip(exc)


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
