"""Lazy re-exports for package ``__init__`` files (PEP 562).

A package lists its public names under ``if TYPE_CHECKING:`` imports (what mypy and IDEs
read) and, in the ``else:`` branch, builds ``__getattr__``/``__dir__`` here from the same
names grouped by the module that defines them. A name's module is imported on its first
access, never at package import; the value is then stored in the package, so later
lookups are plain attribute reads. An unknown name raises ``AttributeError`` as usual
(``from package import submodule`` still works: Python falls back to importing it).
Keeping ``__getattr__`` out of mypy's sight keeps a misspelt name a type error.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, Iterable[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``; ``exports`` maps a module to the
    public names it defines. Raises ``ValueError`` when two modules claim one name."""
    where: dict[str, str] = {}
    for module, names in exports.items():
        for name in names:
            if where.setdefault(name, module) != module:
                raise ValueError(f"{package}.{name} is exported by {where[name]} and {module}")
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:  # noqa: N807 - the PEP 562 hook
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:  # noqa: N807 - the PEP 562 hook
        return sorted({*namespace, *where})

    return __getattr__, __dir__
