"""Modules imported from files under private names, and the names users know them by.

A topology file is imported under a private module name (``streams.topology.loader``),
so that it never takes the place of a module of the same name in ``sys.modules`` and two
files with one stem can both be loaded; what users read (the exception types in error
headers) names it by its file's stem, as they wrote it.
"""

from __future__ import annotations

_SHOWN: dict[str, str] = {}


def register(private: str, shown: str) -> None:
    """Show module ``private`` as ``shown``."""
    _SHOWN[private] = shown


def shown_name(module: str) -> str:
    """The name users know ``module`` by: a file's stem for a file imported under a
    private name, else ``module`` itself."""
    return _SHOWN.get(module, module)
