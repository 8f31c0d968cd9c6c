"""An in-memory changelog producer, for the test driver and unit tests (no broker).

It implements :class:`streams.state.base.ChangelogProducer`: records are kept per
``(topic, partition)`` with offsets assigned in order, and delivery callbacks run on
``poll``/``flush``, as with a real producer. ``fail_next`` makes the next deliveries fail.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from streams.state.base import DeliveryCallback


@dataclass(frozen=True, slots=True)
class ProducedRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes]]


class RecordedMessage:
    """A produced record seen as a consumed message (``streams.state.recovery.ChangelogMessage``),
    so a replay can read what the producer kept."""

    __slots__ = ("_record",)

    def __init__(self, record: ProducedRecord) -> None:
        self._record = record

    def offset(self) -> int:
        return self._record.offset

    def partition(self) -> int:
        return self._record.partition

    def topic(self) -> str:
        return self._record.topic

    def key(self) -> bytes | None:
        return self._record.key

    def value(self) -> bytes | None:
        return self._record.value

    def headers(self) -> list[tuple[str, bytes]]:
        return list(self._record.headers)

    def error(self) -> None:
        return None


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
            record = ProducedRecord(topic, partition, -1, key, value, list(headers or ()))
        else:
            record = ProducedRecord(topic, partition, len(records), key, value, list(headers or ()))
            records.append(record)
        self._pending.append((record, on_delivery, failed))

    def poll(self, timeout: float = 0) -> int:
        pending, self._pending = self._pending, []
        for record, callback, failed in pending:
            if callback is not None:
                callback("delivery failed (injected)" if failed else None, RecordedMessage(record))
        return len(pending)

    def flush(self, timeout: float = 0) -> int:
        self.poll()
        return 0

    def records(self, topic: str, partition: int = 0) -> list[ProducedRecord]:
        return list(self.log.get((topic, partition), ()))

    def messages(self, topic: str, partition: int = 0) -> list[RecordedMessage]:
        """The partition's records as consumed messages, in offset order."""
        return [RecordedMessage(r) for r in self.log.get((topic, partition), ())]
