"""Optional Cython build of the record path's modules (see ``streams/speedups.py``).

Everything else is in ``pyproject.toml``. Each module in ``streams.speedups.COMPILED`` is
compiled, unchanged, into an extension module of the same name beside its source; without
Cython or a C compiler (or with ``STREAMS_PURE_PYTHON=1``) the package installs as plain
Python and says so once.
"""

from __future__ import annotations

import os
import runpy
import sys
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# Read from the file, not imported: ``import streams`` would need the dependencies.
COMPILED: tuple[str, ...] = runpy.run_path("streams/speedups.py")["COMPILED"]


def _skip(why: object) -> None:
    print(f"streams: the record path's modules stay plain Python ({why})", file=sys.stderr)


def extensions() -> list[Any]:
    if os.environ.get("STREAMS_PURE_PYTHON"):
        return []
    try:
        from Cython.Build import cythonize  # noqa: PLC0415 - only when building
    except ImportError as exc:
        _skip(exc)
        return []
    modules = [Extension(name, [f"{name.replace('.', '/')}.py"]) for name in COMPILED]
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
            nthreads=os.cpu_count() or 1,
        )
    )


class OptionalBuildExt(build_ext):
    """A failed compilation leaves the plain modules in use instead of failing the install.
    The C compiles run in parallel, one per core, without debug info."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler, no Python headers: the platform's errors
            _skip(exc)

    def build_extension(self, ext: Extension) -> None:
        if self.compiler.compiler_type == "unix":
            # No debug info (Python's own CFLAGS ask for -g): the same machine code, objects
            # an eighth of the size, and a fifth less compile time for the generated C.
            ext.extra_compile_args = [*ext.extra_compile_args, "-g0"]
        try:
            super().build_extension(ext)
        except Exception as exc:
            _skip(exc)


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
