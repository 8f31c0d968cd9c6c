"""What a processor sees besides the envelope: the current record's metadata, ``forward``.

One context object exists per processor node for the life of a run (no per-record
allocation); ``record`` is built lazily from the record being processed, so a processor
that never asks for it pays nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from streams.envelope import Envelope
from streams.topology.errors import TopologyError


@dataclass(frozen=True, slots=True)
class RecordMeta:
    """Where the record being processed came from."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    headers: Sequence[tuple[str, bytes | None]]


class CurrentRecord(Protocol):
    """What a plan's executor says of the record being processed (``pipeline.Record``)."""

    @property
    def meta(self) -> RecordMeta: ...


class Current:
    """The record being processed, shared by every context of one executing plan."""

    __slots__ = ("record",)

    def __init__(self) -> None:
        self.record: Any = None  # a CurrentRecord while a record is processed


class ProcessorContext:
    """Handed to processors with each envelope.

    - ``forward(envelope, to=None)`` sends an envelope downstream, synchronously: the
      children run before ``forward`` returns. ``to`` names one of the processor's declared
      outputs; it may be left out when the processor has exactly one output.
    - ``record``: topic, partition, offset, timestamp, key and headers of the input record.
    - ``app_id``: the running app.
    - ``store(name)``: a state store the topology declares (``builder.store(name)``): a
      ``streams.state.Transaction`` (``get/set/delete/exists``, with ``ttl``) over the
      current record's partition; writes reach the changelog at the next commit.
    """

    __slots__ = ("_current", "_default", "_outputs", "_stores", "app_id", "node")

    def __init__(
        self,
        app_id: str,
        node: str,
        current: Current,
        outputs: Mapping[str, Callable[[Envelope], None]],
        stores: Mapping[str, Any] | None = None,
    ) -> None:
        self.app_id = app_id
        self.node = node
        self._current = current
        self._outputs = dict(outputs)
        self._default = next(iter(self._outputs.values())) if len(self._outputs) == 1 else None
        self._stores = dict(stores or {})

    def forward(self, envelope: Envelope, to: str | None = None) -> None:
        """Send ``envelope`` to the output ``to`` (or the only output). Raises TopologyError
        for an output the processor did not declare."""
        if to is None:
            if self._default is None:
                raise TopologyError(
                    f"processor {self.node!r} has outputs {sorted(self._outputs)}: "
                    "forward(..., to=<name>) must name one"
                )
            self._default(envelope)
            return
        child = self._outputs.get(to)
        if child is None:
            raise TopologyError(
                f"processor {self.node!r} forwarded to undeclared output {to!r} "
                f"(declared: {sorted(self._outputs)})"
            )
        child(envelope)

    @property
    def record(self) -> RecordMeta:
        """Metadata of the input record being processed. Raises outside of processing."""
        record: CurrentRecord | None = self._current.record
        if record is None:
            raise TopologyError("no record is being processed")
        return record.meta

    def store(self, name: str) -> Any:
        """The state store ``name`` of this topology."""
        try:
            return self._stores[name]
        except KeyError:
            raise TopologyError(f"processor {self.node!r}: no state store named {name!r}") from None
