"""What the stateful steps of a topology keep and read: plain data the builder makes and
the execution (``streams.topology.execution``) runs.

- ``AggregateSpec``: an aggregation's fold, value type, windows and store;
- ``DedupSpec``: a dedup step's window and store;
- ``Lookup``: a table as a join reads it (its store, the type of its values);
- ``TableJoinSpec``: the two tables of a table-table join;
- ``WindowJoinSpec``: a windowed stream-stream join's window, grace and store.

``table_spec`` finds what keeps a named table; nothing here touches a store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from streams.envelope import Envelope
from streams.topology.errors import TopologyError
from streams.topology.nodes import StepKind, StepNode
from streams.topology.windows import AnyWindows

if TYPE_CHECKING:
    from streams.topology.topology import Topology

EMITS = ("updates", "final")
LATE = "late"
"""The output of a windowed aggregation that receives its late records, when read."""


@dataclass(frozen=True, slots=True)
class AggregateSpec:
    """What an aggregation step does: ``first(envelope)`` makes a key's value from its
    first record, ``add(value, envelope)`` folds in each next one; values are ``type``
    (a primitive name, or a catalog type at ``version``); ``windows`` (None: one value per
    key for ever); ``emit``: ``updates`` (every change) or ``final`` (a window's value when
    it closes); ``store``: the step's store; ``what``: count, reduce or aggregate;
    ``merge(a, b)``: two values in one (sessions that a record bridges)."""

    what: str
    first: Callable[[Envelope], Any]
    add: Callable[[Any, Envelope], Any]
    type: str
    version: int | None
    windows: AnyWindows | None
    emit: str
    store: str
    merge: Callable[[Any, Any], Any] | None = None

    def describe(self) -> str:
        value = self.type if self.version is None else f"{self.type}@{self.version}"
        window = f", {self.windows.describe()}" if self.windows is not None else ""
        return f"{self.what} as {value}{window}, emits {self.emit}"


@dataclass(frozen=True, slots=True)
class DedupSpec:
    """What a dedup step needs besides its key function: the window and its store."""

    ttl: float
    store: str


@dataclass(frozen=True, slots=True)
class Lookup:
    """A table as a join reads it: its store, the ``type`` (and ``version``) of its
    values; ``inner``: the join drops records whose key has no value."""

    store: str
    type: str
    version: int | None
    inner: bool = False


@dataclass(frozen=True, slots=True)
class TableJoinSpec:
    """A join of two tables by key: both tables, each as a join reads it."""

    left: Lookup
    right: Lookup


@dataclass(frozen=True, slots=True)
class WindowJoinSpec:
    """A windowed join: its store, how far apart two records may be (``within_ms``), and
    how long after that a record may still arrive out of order (``grace_ms``)."""

    store: str
    within_ms: int
    grace_ms: int
    left_outer: bool = False
    """A left join: left records that met nothing are handed on alone."""

    @property
    def keep_ms(self) -> int:
        """How long a record is kept after its event time, in the other side's stream time:
        the other side's records up to ``within + grace`` behind it are not late, and may
        be ``within`` before it."""
        return 2 * self.within_ms + self.grace_ms

    def describe(self) -> str:
        kind = "left join, " if self.left_outer else ""
        return f"{kind}within {self.within_ms / 1000:g} s, grace {self.grace_ms / 1000:g} s"


def table_spec(topology: Topology, name: str) -> AggregateSpec | Lookup:
    """What keeps table ``name`` (its ``Table.name``: an aggregation, or a table topic
    materialised) in a store of its own. Raises TopologyError for a name that is no table."""
    node = topology.nodes.get(name)
    spec: AggregateSpec | Lookup | None = None
    if isinstance(node, StepNode):  # what keeps a table in a store of its own
        spec = {StepKind.AGGREGATE: node.aggregate, StepKind.TABLE: node.lookup}.get(node.kind)
    if spec is None:
        tables = [n.name for n in topology.steps if n.kind in (StepKind.AGGREGATE, StepKind.TABLE)]
        raise TopologyError(
            f"topology {topology.app_id!r} has no table {name!r} (tables: {tables or 'none'})"
        )
    return spec
