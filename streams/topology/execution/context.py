"""What a processor sees besides the envelope: the current record's metadata, ``forward``.

One context object exists per processor node for the life of a run (no per-record
allocation); ``record`` is built lazily from the record being processed, so a processor
that never asks for it pays nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from streams.envelope import Envelope, derived_id
from streams.topology.errors import TopologyError
from streams.topology.execution.schedule import Fire, Timer, interval_ms


@dataclass(frozen=True, slots=True)
class RecordMeta:
    """Where the record being processed came from."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    headers: Sequence[tuple[str, bytes | None]]
    delivery_count: int | None = None
    """How many times a share group delivered this record, this time included (None: read
    by a consumer group, which does not count)."""


class CurrentRecord(Protocol):
    """What a plan's executor says of the record being processed (``pipeline.Record``)."""

    @property
    def meta(self) -> RecordMeta: ...


class Current:
    """The record being processed, shared by every context of one executing plan; the
    cause of the events its steps make (``streams.envelope.Cause``: the runtime sets it as
    ``CURRENT_CAUSE``)."""

    __slots__ = ("record",)

    def __init__(self) -> None:
        self.record: Any = None  # a CurrentRecord while a record is processed

    def derived_id(self, source: str) -> str | None:
        return caused_id(self.record, source)

    def pinned(self) -> RecordCause:
        return RecordCause(self.record)


class RecordCause:
    """One record as the cause of events (``streams.envelope.Cause``): what a coroutine
    started for it sees, while the plan's ``Current`` moves on to other records."""

    __slots__ = ("record",)

    def __init__(self, record: Any) -> None:
        self.record = record

    def derived_id(self, source: str) -> str | None:
        return caused_id(self.record, source)

    def pinned(self) -> RecordCause:
        return self


def caused_id(record: Any, source: str) -> str | None:
    """The id of the next event ``source`` makes for ``record`` (``derived_id`` of its
    envelope's id and the events made for it so far: ``record.caused``), or None for no
    record or one without an envelope (a timer's)."""
    cause: Envelope | None = getattr(record, "envelope", None)
    if cause is None:
        return None
    index = record.caused
    record.caused = index + 1
    return derived_id(cause.id, source, index)


class ProcessorContext:
    """Handed to processors with each envelope.

    - ``forward(envelope, to=None)`` sends an envelope downstream, synchronously: the
      children run before ``forward`` returns. ``to`` names one of the processor's declared
      outputs; it may be left out when the processor has exactly one output.
    - ``record``: topic, partition, offset, timestamp, key and headers of the input record.
    - ``app_id``: the running app.
    - ``store(name)``: a state store the topology declares (``builder.store(name)``): a
      ``streams.state.Transaction`` (``get/set/delete/exists``, with ``ttl``, and
      ``items()``) over the current record's partition; writes reach the changelog at the
      next commit.
    - ``partition``: the input partition being processed (a record's, or a timer's).
    - ``schedule(interval, fn, time=)``: in ``init``, a timer
      (``streams.topology.execution.schedule``).
    - ``reply(envelope)``: send ``envelope`` as the reply to the request being processed
      (``streams.topology.execution.replier``).
    """

    __slots__ = (
        "_current",
        "_default",
        "_outputs",
        "_reply",
        "_stores",
        "_timers",
        "app_id",
        "node",
    )

    def __init__(
        self,
        app_id: str,
        node: str,
        current: Current,
        outputs: Mapping[str, Callable[[Envelope], None]],
        stores: Mapping[str, Any] | None = None,
        *,
        timers: list[Timer] | None = None,
        reply: Callable[[Envelope], None] | None = None,
    ) -> None:
        self.app_id = app_id
        self.node = node
        self._current = current
        self._outputs = dict(outputs)
        self._default = next(iter(self._outputs.values())) if len(self._outputs) == 1 else None
        self._stores = dict(stores or {})
        self._timers = timers
        self._reply = reply

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

    def emit(self, result: Any) -> None:
        """Forward what a processor or a timer returned: None (nothing), an envelope, or
        an iterable of envelopes, to the only output."""
        if result is None:
            return
        if isinstance(result, Envelope):
            self.forward(result)
        else:
            for item in result:
                self.forward(item)

    def reply(self, envelope: Envelope) -> None:
        """Send ``envelope`` to the requester of the record being processed: to the topic
        its ``reply-to`` header names, with its correlation id, as one of the record's
        outputs (so with the topology's guarantee). A record that is no request fails
        with ``NotARequestError``, to the dead-letter topic."""
        if self._reply is None:
            raise TopologyError(f"processor {self.node!r}: no reply outside a running plan")
        self._reply(envelope)

    def schedule(self, interval: float, fn: Fire, *, time: str = "stream") -> None:
        """Run ``fn(now_ms, ctx)`` every ``interval`` seconds of ``time`` (``"stream"``:
        the partition's event time; ``"wall"``: the clock), once per owned input partition;
        what it returns is forwarded as ``process``'s result is. Call it from ``init``."""
        if self._timers is None or self._current.record is not None:
            raise TopologyError(f"processor {self.node!r}: schedule timers in init()")
        if inspect.iscoroutinefunction(fn):
            raise TopologyError(
                f"processor {self.node!r}: a timer's function runs with the partition's "
                "stores on the runtime's thread and cannot be async"
            )
        every = interval_ms(self.node, interval, time)

        def run(now_ms: int) -> None:
            self.emit(fn(now_ms, self))

        self._timers.append(Timer(self.node, every, time, run))

    @property
    def partition(self) -> int:
        """The input partition being processed (by a record or a timer)."""
        current = self._current.record
        if current is None:
            raise TopologyError("no record is being processed")
        partition: int = current.origin_partition
        return partition

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
