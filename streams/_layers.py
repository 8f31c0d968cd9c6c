"""The layer table: which top-level parts of ``streams`` may import which.

``LAYERS`` lists the parts lowest first; a module may import from its own layer and the
ones below, never from one above (``tests/unit/repository/test_layers.py`` checks every import, and
``tests/unit/repository/test_architecture_doc.py`` that docs/architecture.md shows this table). A
part is a top-level module or package of ``streams``, or ``package.module`` for a
package in ``PER_MODULE``, whose modules serve several layers. ``TEST_KIT`` is the one
part that product code on its own layer or below never imports: only the layers above it
(the commands, the demo, the bench) drive a topology with it. Imports nothing.
"""

from __future__ import annotations

LAYERS: tuple[frozenset[str], ...] = (
    # what a record is on the wire, and the door to the cluster
    frozenset(
        {
            "_layers",
            "_lazy",
            "speedups",
            "file_modules",
            "errors",
            "client_errors",
            "record_size",
            "timespec",
            "http_access",
            "setting_names",
            "config",
            "logs",
            "coordinates",
            "envelope",
            "cluster",
            "schemas",
            "codec",
            "observability.health",
        }
    ),
    frozenset({"examples"}),
    # the stores, failure routing decisions, a local broker
    frozenset({"state", "failures", "broker", "observability.tracing", "observability.otel"}),
    frozenset({"topology"}),  # what to run
    frozenset({"pipeline", "observability.metrics", "observability.server"}),  # record path
    frozenset({"runtime"}),
    # what runs topologies for you, and operations on topics and groups
    frozenset({"testing", "replay", "dlq", "tools", "faust", "patterns"}),
    frozenset({"cli", "demo", "bench", "__main__"}),  # the commands and the tour
)

PER_MODULE: frozenset[str] = frozenset({"observability"})

TEST_KIT = "testing"


def layer_of() -> dict[str, int]:
    """Each part's layer, lowest 0; a ``PER_MODULE`` package itself (a docstring) is on 0."""
    levels = {name: level for level, names in enumerate(LAYERS) for name in names}
    levels.update(dict.fromkeys(PER_MODULE, 0))
    return levels


def part_of(module: str) -> str:
    """The part a dotted module name of ``streams`` belongs to (``streams.pipeline.step``:
    ``pipeline``; ``streams.observability.metrics``: ``observability.metrics``)."""
    parts = module.split(".")
    return ".".join(parts[1:3]) if parts[1] in PER_MODULE else parts[1]
