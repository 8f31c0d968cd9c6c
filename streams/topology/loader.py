"""Load a topology from a Python file, as ``streams run`` and ``streams describe`` do.

A topology file exposes its topology in one of two ways (first found wins):

- ``build(**params) -> Topology``: a function, called with the ``--set key=value`` params
  (and ``app_id`` when ``--app-id`` is given and ``build`` accepts it);
- ``topology``: a module-level ``Topology`` object.

``--app-id`` always wins: the topology is re-scoped with ``Topology.with_app_id``.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

from streams.errors import StreamsError
from streams.file_modules import register
from streams.topology.errors import TopologyError, TopologyLoadError
from streams.topology.topology import Topology


def import_file(path: str | Path) -> ModuleType:
    """Import a Python file as a module (for topology files and their helpers), under a
    private name of its own: no module of ``sys.modules`` is replaced, two files with one
    stem both stay loaded, and error headers name its classes by the stem."""
    path = Path(path)
    if not path.is_file():
        raise TopologyLoadError(f"no topology file at {path}")
    name = _module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TopologyLoadError(f"{path} is not an importable Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except StreamsError:
        raise
    except Exception as exc:
        raise TopologyLoadError(f"{path}: importing failed: {type(exc).__name__}: {exc}") from exc
    return module


_NAMES: dict[Path, str] = {}  # a file's private module name, the same at every import


def _module_name(path: Path) -> str:
    """A private module name for ``path``, its own among the files imported (a file with
    the stem of another gets a number), shown as the stem (``streams.file_modules``)."""
    resolved = path.resolve()
    name = _NAMES.get(resolved)
    if name is None:
        taken = set(_NAMES.values())
        name = base = f"_streams_topology_{path.stem}"
        number = 1
        while name in taken:
            number += 1
            name = f"{base}_{number}"
        _NAMES[resolved] = name
        register(name, path.stem)
    return name


def load_topology(
    path: str | Path, *, app_id: str | None = None, params: Mapping[str, str] | None = None
) -> Topology:
    """Import ``path`` and return its topology, as ``streams run`` and ``describe`` do:
    ``params`` are their ``--set key=value`` pairs (strings), passed to the file's
    ``build()``, and ``app_id`` is ``--app-id``.

    Raises ``TopologyLoadError`` when the file is missing, fails to import, exposes
    neither ``build`` nor ``topology``, or is given a param ``build()`` does not take (or
    any, to a module-level ``topology``); validation errors of the topology itself
    propagate as ``TopologyValidationError``."""
    path = Path(path)
    module = import_file(path)
    params = dict(params or {})
    build = getattr(module, "build", None)
    if callable(build):
        accepted = inspect.signature(build).parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())
        if app_id is not None and ("app_id" in accepted or takes_any):
            params.setdefault("app_id", app_id)
        unknown = [k for k in params if k not in accepted and not takes_any]
        if unknown:
            raise TopologyLoadError(
                f"{path}: build() takes no parameter {', '.join(map(repr, unknown))} "
                f"(it takes: {', '.join(accepted) or 'none'})"
            )
        try:
            result = build(**params)
        except StreamsError:
            raise
        except Exception as exc:
            raise TopologyLoadError(f"{path}: build() failed: {type(exc).__name__}: {exc}") from exc
    elif hasattr(module, "topology"):
        if params:
            raise TopologyLoadError(f"{path}: exposes a `topology` object, which takes no --set")
        result = module.topology
    else:
        raise TopologyLoadError(
            f"{path} exposes no topology: define `build()` returning one, or a module-level "
            "`topology`"
        )
    if not isinstance(result, Topology):
        hint = " (did you forget .build()?)" if hasattr(result, "build") else ""
        raise TopologyError(f"{path}: expected a Topology, got {type(result).__name__}{hint}")
    if app_id is not None and result.app_id != app_id:
        result = result.with_app_id(app_id)
    return result
