"""What a processor sees besides the envelope: the current record's metadata, ``forward``.

One context object exists per processor node for the life of a run (no per-record
allocation); ``record`` is built lazily from the message being processed, so a processor
that never asks for it pays nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from streams.envelope import Envelope
from streams.topology.errors import TopologyError


class MessageLike(Protocol):
    """The part of ``confluent_kafka.Message`` the runtime and the test driver share."""

    def topic(self) -> str | None: ...
    def partition(self) -> int | None: ...
    def offset(self) -> int | None: ...
    def timestamp(self) -> tuple[int, int]: ...
    def key(self) -> Any: ...  # bytes | None (the stubs of confluent-kafka say more)
    def headers(self) -> Any: ...  # list[tuple[str, bytes | None]] | None


@dataclass(frozen=True, slots=True)
class RecordMeta:
    """Where the record being processed came from."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    headers: Sequence[tuple[str, bytes | None]]

    @classmethod
    def from_message(cls, msg: MessageLike) -> RecordMeta:
        return cls(
            topic=msg.topic() or "",
            partition=msg.partition() or 0,
            offset=msg.offset() or 0,
            timestamp_ms=msg.timestamp()[1],
            key=msg.key(),
            headers=tuple(msg.headers() or ()),
        )


class Current:
    """The message being processed, shared by every context of one executing plan."""

    __slots__ = ("message",)

    def __init__(self) -> None:
        self.message: MessageLike | None = None


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
        msg = self._current.message
        if msg is None:
            raise TopologyError("no record is being processed")
        return RecordMeta.from_message(msg)

    def store(self, name: str) -> Any:
        """The state store ``name`` of this topology."""
        try:
            return self._stores[name]
        except KeyError:
            raise TopologyError(f"processor {self.node!r}: no state store named {name!r}") from None
