"""What the in-memory cluster stores: records, transactions, and their client-side views.

A partition's log is a list of :class:`StoredRecord`, the list index being the offset.
Transaction control markers (one per partition when a transaction ends, as Kafka writes
them) are stored records too, flagged ``control``; no reader ever sees them, but they take
an offset, so offsets after a transaction are the broker's. A record written inside a
transaction shares that transaction's :class:`Transaction`, whose state flips once for all
of its records on commit or abort.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from confluent_kafka import TIMESTAMP_CREATE_TIME, KafkaError, KafkaException, Message

Headers = list[tuple[str, bytes | None]]


class TxState(Enum):
    """Where a transaction is; records outside any transaction count as committed."""

    OPEN = "open"
    COMMITTED = "committed"
    ABORTED = "aborted"


class Transaction:
    """One producer transaction: the partitions it wrote to and the group offsets sent to it
    (committed for their group only if the transaction commits)."""

    __slots__ = ("offsets", "partitions", "state")

    def __init__(self) -> None:
        self.state = TxState.OPEN
        self.partitions: set[tuple[str, int]] = set()
        self.offsets: dict[str, dict[tuple[str, int], tuple[int, str | None]]] = {}


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """One entry of a partition's log. ``sequence`` orders records across partitions by
    arrival; ``transaction`` is None for a record written outside a transaction."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    sequence: int = field(default=0, repr=False, compare=False)
    transaction: Transaction | None = field(default=None, repr=False, compare=False)
    control: bool = field(default=False, repr=False, compare=False)

    @property
    def state(self) -> TxState:
        return TxState.COMMITTED if self.transaction is None else self.transaction.state


@dataclass(frozen=True, slots=True)
class GroupMetadata:
    """What ``MemoryConsumer.consumer_group_metadata`` returns and
    ``MemoryProducer.send_offsets_to_transaction`` takes: the consumer's group."""

    group_id: str


def to_message(record: StoredRecord) -> Message:
    """The record as a consumer (or a delivery report) hands it out."""
    return Message(
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        key=record.key,
        value=record.value,
        # librdkafka reports a record without headers as None, not as an empty list
        headers=list(record.headers) or None,
        timestamp=(TIMESTAMP_CREATE_TIME, record.timestamp_ms),
    )


def as_bytes(data: str | bytes | None) -> bytes | None:
    """Keys and values as confluent-kafka accepts them: str is sent as UTF-8."""
    return data.encode() if isinstance(data, str) else data


def as_headers(headers: Mapping[str, Any] | Sequence[tuple[str, Any]] | None) -> Headers:
    """Headers as confluent-kafka accepts them (a dict or (name, value) pairs; str values
    sent as UTF-8), normalised to a list of pairs."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers or ()
    return [(str(name), as_bytes(value)) for name, value in pairs]


def kafka_exception(code: int, reason: str, *, fatal: bool = False) -> KafkaException:
    """The exception confluent-kafka raises for a client error ``code``."""
    return KafkaException(KafkaError(code, reason, fatal=fatal))
