"""A consumed record on its way through the chain: built once, read by every step.

The runtime's loop makes one ``Record`` per message it takes from the consumer
(``Record.of``); no step calls the message again. A record carries:

- where it was read (``topic``, ``partition``, ``offset``) and, as consumed, its
  ``timestamp`` (ms, None when the broker gave none), ``key``, ``value`` and ``headers``
  (asked of the message when first read: confluent-kafka builds them at about 4 µs a
  record, and the happy path reads none: the value is the authority);
- ``failure``: for a record read from a retry tier, its error headers, parsed once by the
  retry gate (which then leaves ``headers`` without them: what decoding and processors
  see); None for a record read from an input topic;
- ``offsets``: its partition's ``PartitionOffsets``, set by ``Track``; ``Commit`` moves
  the partition's position past the record once it went through the chain (None for a
  record let out of a waiting room: the record that let it out moves its own partition);
- ``envelope``: the decoded envelope, once decoded; ``outputs``: what the plan wrote for
  it, sent by ``Produce`` only once the attempt succeeded;
- ``delivery_count``: for a record a share group delivered, the how-many-th delivery
  this is (None otherwise);
- ``caused``: how many events its processing made so far (each one's id is derived from
  the record's, ``streams.envelope.derived_id``, with this count as its index).

``origin_topic``/``origin_partition`` name the *input* partition a record belongs to (a
retry copy's origin): its stores and its waiting room are that partition's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streams.coordinates import Coordinates
from streams.failures.headers import (
    FailureInfo,
    Header,
    Headers,
    strip_failure_headers,
)
from streams.topology.execution.context import RecordMeta

if TYPE_CHECKING:
    from streams.envelope import Envelope
    from streams.failures.parked import ParkedRecord
    from streams.pipeline.offsets import PartitionOffsets

Output = tuple[str, bytes | None, bytes, list[tuple[str, bytes]]]
"""A write the plan made: topic, key, value, headers (partitioned by key)."""

_NO_HEADERS: tuple[Header, ...] = ()
_NO_OUTPUTS: tuple[Output, ...] = ()


class Record:
    """One record in the chain (see the module docstring). Not thread-safe."""

    __slots__ = (
        "_headers",
        "_message",
        "caused",
        "delivery_count",
        "envelope",
        "failure",
        "key",
        "offset",
        "offsets",
        "outputs",
        "partition",
        "redeliver",
        "timestamp",
        "topic",
        "value",
    )

    def __init__(  # noqa: PLR0917 - positional: made once per consumed record
        self,
        topic: str,
        partition: int,
        offset: int,
        timestamp: int | None,
        key: bytes | None,
        value: bytes | None,
        headers: Headers | None,
        failure: FailureInfo | None = None,
        message: Any = None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self._headers = headers
        self._message = message  # asked for headers when ``_headers`` is None
        self.failure = failure
        self.offsets: PartitionOffsets | None = None
        self.envelope: Envelope | None = None
        self.outputs: list[Output] | tuple[Output, ...] = _NO_OUTPUTS
        self.delivery_count: int | None = None  # a share group's count (``shared``)
        self.caused = (
            0  # events made for it so far (``streams.topology.execution.context.caused_id``)
        )
        self.redeliver = False  # a share group delivers it again (``pipeline.share``)

    @classmethod
    def of(cls, message: Any) -> Record:
        """The record of a consumed ``confluent_kafka.Message`` (without error)."""
        kind, ms = message.timestamp()
        return cls(
            message.topic(),
            message.partition(),
            message.offset(),
            ms if kind else None,
            message.key(),
            message.value(),
            None,
            None,
            message,
        )

    @classmethod
    def shared(cls, message: Any) -> Record:
        """The record of a message a share consumer delivered (its delivery count kept)."""
        record = cls.of(message)
        record.delivery_count = message.delivery_count()
        return record

    @classmethod
    def released(cls, parked: ParkedRecord) -> Record:
        """A record let out of its key's waiting room (its offset was passed when it was
        parked; the record that let it out commits with its writes)."""
        coordinates = parked.coordinates
        return cls(
            coordinates.topic,
            coordinates.partition,
            coordinates.offset,
            parked.timestamp,
            parked.key,
            parked.value,
            strip_failure_headers(parked.headers) if parked.failure else parked.headers,
            parked.failure,
        )

    @property
    def headers(self) -> Headers:
        headers = self._headers
        if headers is None:
            message = self._message
            headers = self._headers = (message.headers() if message else None) or _NO_HEADERS
            self._message = None
        return headers

    @headers.setter
    def headers(self, headers: Headers) -> None:
        self._headers = headers

    # -- what failure routing reads (``streams.failures.handler.RecordLike``) ----------------
    @property
    def coordinates(self) -> Coordinates:
        """Where it was read (a retry tier's partition for a retry copy)."""
        return Coordinates(self.topic, self.partition, self.offset)

    @property
    def origin(self) -> Coordinates:
        """Where it was first read in its input topic."""
        return self.failure.origin if self.failure is not None else self.coordinates

    @property
    def origin_topic(self) -> str:
        return self.failure.origin.topic if self.failure is not None else self.topic

    @property
    def origin_partition(self) -> int:
        return self.failure.origin.partition if self.failure is not None else self.partition

    # -- what processors read (``ctx.record``) ---------------------------------------------
    @property
    def meta(self) -> RecordMeta:
        """Its input coordinates, timestamp, key and headers, as processors see them."""
        origin = self.origin
        return RecordMeta(
            topic=origin.topic,
            partition=origin.partition,
            offset=origin.offset,
            timestamp_ms=self.timestamp if self.timestamp is not None else -1,
            key=self.key,
            headers=tuple(self.headers),
            delivery_count=self.delivery_count,
        )

    def __repr__(self) -> str:
        return f"Record({self.topic}[{self.partition}]@{self.offset})"
