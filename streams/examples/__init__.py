"""The example topologies and their schemas, found from the source tree or an installed wheel.

The examples live at the top of the repository (``topology/*.py``, run with
``streams run topology/orders.py``; ``schemas/``). This package reaches them through two
relative symlinks, ``topology -> ../../topology`` and ``schemas -> ../../schemas``: an
editable install (``pip install -e .``) follows the links to the repository's folders, and
building a wheel copies the linked files into the package (package data in pyproject.toml),
so an installed ``streams`` carries its own copies. Paths are plain files on disk because a
topology file is imported by path (``streams.topology.load_topology``).

Imports nothing from ``streams``: any layer may use it (the demo, the bench, tests).
"""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent
_TOPOLOGIES = _HERE / "topology"


def example_names() -> list[str]:
    """The names of the example topologies (``orders``, ``payments``, ...), sorted."""
    return sorted(p.stem for p in _TOPOLOGIES.glob("*.py") if not p.stem.startswith("_"))


def example_path(name: str) -> Path:
    """The file of example topology ``name`` (e.g. ``"orders"``: ``topology/orders.py``).

    Raises LookupError, naming the examples there are, when there is no such example.
    """
    path = (_TOPOLOGIES / f"{name}.py").resolve()
    if not name.isidentifier() or not path.is_file():
        known = ", ".join(example_names()) or f"none in {_TOPOLOGIES}"
        raise LookupError(f"no example topology {name!r} (examples: {known})")
    return path


def example_schemas() -> Path:
    """The schemas folder the example topologies are written against (``schemas/``)."""
    return (_HERE / "schemas").resolve()
