"""An in-memory changelog producer, for the test driver and unit tests (no broker).

It implements :class:`streams.state.base.ChangelogProducer`: records are kept per
``(topic, partition)`` with offsets assigned in order, and delivery callbacks run on
``poll``/``flush``, as with a real producer, with real ``confluent_kafka.Message`` objects.
``fail_next`` makes the next deliveries fail: they are not kept, and their callbacks get a
``KafkaError(_MSG_TIMED_OUT)`` and a message at offset ``OFFSET_INVALID``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_INVALID, TIMESTAMP_NOT_AVAILABLE, KafkaError, Message

from streams.state.base import DeliveryCallback

_INJECTED = "delivery failed (injected)"


@dataclass(frozen=True, slots=True)
class ProducedRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes]]


def _message(record: ProducedRecord, error: KafkaError | None = None) -> Message:
    """The record as confluent-kafka hands it out (delivery report or consumed record)."""
    return Message(
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        key=record.key,
        value=record.value,
        headers=list(record.headers) or None,  # librdkafka: no headers is None
        error=error,
        # this producer keeps no time; a broker-stamped record would carry one
        timestamp=(TIMESTAMP_NOT_AVAILABLE, 0),
    )


@dataclass
class RecordingProducer:
    """Keeps what is produced; ``log[(topic, partition)]`` is that partition's records."""

    log: dict[tuple[str, int], list[ProducedRecord]] = field(default_factory=dict)
    fail_next: int = 0
    _pending: list[tuple[ProducedRecord, DeliveryCallback | None, bool]] = field(
        default_factory=list
    )

    def produce(
        self,
        topic: str,
        *,
        value: bytes | None = None,
        key: bytes | None = None,
        partition: int = 0,
        on_delivery: DeliveryCallback | None = None,
        headers: Any = None,
    ) -> None:
        records = self.log.setdefault((topic, partition), [])
        failed = self.fail_next > 0
        if failed:
            self.fail_next -= 1
            record = ProducedRecord(
                topic, partition, OFFSET_INVALID, key, value, list(headers or ())
            )
        else:
            record = ProducedRecord(topic, partition, len(records), key, value, list(headers or ()))
            records.append(record)
        self._pending.append((record, on_delivery, failed))

    def poll(self, timeout: float = 0) -> int:
        pending, self._pending = self._pending, []
        for record, callback, failed in pending:
            if callback is not None:
                err = KafkaError(KafkaError._MSG_TIMED_OUT, _INJECTED) if failed else None
                callback(err, _message(record, err))
        return len(pending)

    def flush(self, timeout: float = 0) -> int:
        self.poll()
        return 0

    def records(self, topic: str, partition: int = 0) -> list[ProducedRecord]:
        return list(self.log.get((topic, partition), ()))

    def messages(self, topic: str, partition: int = 0) -> list[Message]:
        """The partition's records as ``confluent_kafka.Message`` objects, in offset order,
        as a consumer reads them (so a replay can read what the producer kept)."""
        return [_message(r) for r in self.log.get((topic, partition), ())]
