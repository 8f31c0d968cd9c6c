"""Restore a store partition's local storage from its changelog partition.

Restore reads ``changelog[p]`` from a start offset (0, or the local checkpoint's offset) to
its end as of the start of the restore, in batches, and writes each batch to the local
storage in one atomic write. It blocks until done; the runtime calls it on assignment,
before any input record of that partition is processed.

* Records tagged with a source offset past the committed input offset (``source_offset >
  committed_offset``: written for input whose offset commit never happened) are skipped, so
  the store is never ahead of the input it will resume from.
* A record that cannot be decoded stops the restore with :class:`CorruptChangelogError`
  naming its offset; nothing is skipped silently. Records before it are already applied,
  and the checkpoint is not advanced, so a retry starts at the same place.
* The consumer reads with ``isolation.level=read_committed``: records of aborted
  exactly-once transactions never reach a store.
* A client error that clears by itself (a node lost, a leader moving) does not stop a
  restore: the client fetches again. One that lasts (no progress for ``stall_timeout``, or
  offsets unreadable) raises ``RestoreError`` marked ``transient``: the runtime waits for
  the broker and restores again (``streams.runtime.commit.stores``).

Progress goes to an optional callback ``(topic, partition, done, total)`` (``done`` and
``total`` count changelog offsets, so a bar can show it), a DEBUG log line at the start and
one INFO line at the end of each partition (records read, applied, skipped, seconds);
never a line per record.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from streams.client_errors import transient
from streams.config import bounded_prefetch
from streams.logs import get_logger
from streams.state.base import Entry, LocalStorage
from streams.state.changelog import decode_record
from streams.state.errors import CorruptChangelogError, RestoreError

RestoreProgress = Callable[[str, int, int, int], None]
"""``(changelog topic, partition, offsets done, offsets total)``, called once per batch."""

_log = get_logger("streams.state.restore")

# Errors the broker reports for one record rather than for the connection.
_RECORD_ERRORS = {
    KafkaError._BAD_MSG,
    KafkaError._KEY_DESERIALIZATION,
    KafkaError._VALUE_DESERIALIZATION,
}


@dataclass(frozen=True, slots=True)
class RestoreResult:
    """What one restore did. ``records_read`` counts changelog records consumed."""

    topic: str
    partition: int
    start_offset: int
    end_offset: int
    records_read: int
    applied: int
    skipped: int
    seconds: float


MakeConsumer = Callable[[dict[str, Any]], Any]
"""Builds a consumer from a librdkafka config (``confluent_kafka.Consumer`` by default)."""


def restore_consumer(config: Mapping[str, Any], make: MakeConsumer | None = None) -> Any:
    """A consumer for restores: no group membership, no commits, read_committed.

    ``config`` is the runtime's client config (at least ``bootstrap.servers``; security
    settings pass through). Fetch buffers are kept small so a restore stays light.
    ``make`` builds it (default: ``confluent_kafka.Consumer``).
    """
    return (make or Consumer)(
        {
            "group.id": f"streams-restore-{uuid.uuid4().hex[:8]}",
            **bounded_prefetch(16_384),
            "fetch.max.bytes": 16 * 1024 * 1024,
            # The end of a partition shows up as an empty fetch, which the broker holds
            # this long: at 50 ms, an exactly-once restart spent 53 ms on each changelog
            # partition ending with a transaction marker. A restore with records to read
            # gets them without the wait.
            "fetch.wait.max.ms": 5,
            **config,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        }
    )


def watermarks(consumer: Consumer, topic: str, partition: int, timeout: float) -> tuple[int, int]:
    """``(low, high)`` offsets of ``topic[partition]``. Blocks on the broker; an error that
    clears by itself (a changelog created a moment ago whose leader is not known yet, a
    coordinator moving, a node lost) is asked again until ``timeout``, then raises a
    ``RestoreError`` marked ``transient`` (the runtime waits for the broker and restores
    again); any other raises RestoreError at once."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, partition),
                timeout=max(deadline - time.monotonic(), 0.1),
                cached=False,
            )
        except KafkaException as exc:
            clears = transient(exc.args[0])
            if clears and time.monotonic() < deadline:
                time.sleep(0.1)  # the broker said: ask again once leadership has settled
                continue
            raise RestoreError(
                f"cannot read the offsets of {topic}[{partition}]: {exc.args[0].str()}",
                transient=clears,
            ) from exc
        return int(low), int(high)


def restore_partition(
    consumer: Consumer,
    storage: LocalStorage,
    *,
    topic: str,
    partition: int,
    start_offset: int,
    end_offset: int,
    committed_offset: int | None,
    progress: RestoreProgress | None = None,
    batch_size: int = 10_000,
    stall_timeout: float = 60.0,
) -> RestoreResult:
    """Apply ``topic[partition]`` from ``start_offset`` to its end onto ``storage``.

    ``end_offset`` is the high watermark read before (for progress; the end is where the
    broker reports end of partition). ``committed_offset`` is the input position the
    runtime resumes from; ``None`` applies every record. Blocks until the end; raises
    :class:`CorruptChangelogError` for an undecodable record and :class:`RestoreError`
    when no progress is made for ``stall_timeout`` seconds.
    """
    started = time.perf_counter()
    _log.debug(
        "restoring store partition",
        changelog=topic,
        partition=partition,
        start_offset=start_offset,
        end_offset=end_offset,
    )
    run = ChangelogReplay(
        storage,
        topic=topic,
        partition=partition,
        start_offset=start_offset,
        committed_offset=committed_offset,
    )
    if progress is not None:
        progress(topic, partition, 0, max(end_offset - start_offset, 0))
    if start_offset < end_offset:
        consumer.assign([TopicPartition(topic, partition, start_offset)])
        try:
            _read_to_end(
                consumer, run, end_offset, progress, batch_size=batch_size, stall=stall_timeout
            )
        finally:
            consumer.unassign()
    seconds = time.perf_counter() - started
    _log.info(
        "restored store partition",
        changelog=topic,
        partition=partition,
        records=run.read,
        applied=run.applied,
        skipped_past_commit=run.skipped,
        end_offset=run.position,
        seconds=round(seconds, 3),
    )
    return RestoreResult(
        topic, partition, start_offset, run.position, run.read, run.applied, run.skipped, seconds
    )


class ChangelogMessage(Protocol):
    """What a replay reads of a consumed record (a ``confluent_kafka.Message`` is one)."""

    def error(self) -> KafkaError | None: ...
    def offset(self) -> int | None: ...
    def key(self) -> str | bytes | None: ...
    def value(self) -> str | bytes | None: ...
    def headers(self) -> Any: ...


class ChangelogReplay:
    """Applies changelog records to a local storage, batch by batch, and counts.

    The decision of a restore lives here: records tagged past ``committed_offset`` are
    skipped; an undecodable record raises :class:`CorruptChangelogError` after the records
    before it in its batch are written. ``position`` is the next offset to read.
    """

    def __init__(
        self,
        storage: LocalStorage,
        *,
        topic: str,
        partition: int,
        start_offset: int,
        committed_offset: int | None,
    ) -> None:
        self.storage = storage
        self.topic = topic
        self.partition = partition
        self.committed = committed_offset
        self.position = start_offset
        self.read = self.applied = self.skipped = 0

    def apply(self, batch: Sequence[ChangelogMessage]) -> bool:
        """Apply one batch in one write; True once the end of the partition is seen."""
        changes: dict[bytes, Entry | None] = {}
        committed = self.committed
        try:
            for msg in batch:
                offset = msg.offset() or 0
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        self.position = max(self.position, offset)
                        return True
                    if err.code() in _RECORD_ERRORS:
                        raise CorruptChangelogError(self.topic, self.partition, offset, err.str())
                    if transient(err):
                        continue  # the client's (a node lost, a leader moving): it fetches again
                    raise RestoreError(
                        f"restore of {self.topic}[{self.partition}] failed: {err.str()}"
                    )
                self.read += 1
                key, value = msg.key(), msg.value()
                record = decode_record(
                    key.encode() if isinstance(key, str) else key,
                    value.encode() if isinstance(value, str) else value,
                    msg.headers(),
                    topic=self.topic,
                    partition=self.partition,
                    offset=offset,
                )
                self.position = offset + 1
                source = record.source_offset
                if committed is not None and source is not None and source > committed:
                    self.skipped += 1
                    continue
                changes[record.key] = record.entry
                self.applied += 1
        finally:
            # What came before a bad record is applied; the checkpoint does not move past it.
            if changes:
                self.storage.write(changes)
        return False


def _read_to_end(
    consumer: Consumer,
    replay: ChangelogReplay,
    end: int,
    progress: RestoreProgress | None,
    *,
    batch_size: int,
    stall: float,
) -> None:
    start = replay.position
    deadline = time.monotonic() + stall
    done = False
    while not done:
        # What is fetched already, else the first record or event to come: ``consume``
        # alone returns only with a full batch or at its timeout, so the end-of-partition
        # event (the end of a changelog written in transactions: a marker no record
        # reaches) waited out the whole timeout, 0.5 s a partition at every restart under
        # exactly-once.
        batch = consumer.consume(batch_size, timeout=0) or consumer.consume(1, timeout=0.5)
        before = replay.position
        # The end: the high watermark read before, or the broker's end-of-partition (a
        # changelog written in transactions ends with a marker no record reaches).
        done = bool(batch) and (replay.apply(batch) or replay.position >= end)
        if done or replay.position > before:
            deadline = time.monotonic() + stall
            if progress is not None:
                done_now = min(replay.position, end) - start
                progress(replay.topic, replay.partition, done_now, end - start)
        elif time.monotonic() > deadline:
            raise RestoreError(
                f"restore of {replay.topic}[{replay.partition}] made no progress for "
                f"{stall:.0f} s at offset {replay.position} (end {end}); "
                "is the broker reachable?",
                transient=True,  # the runtime waits for the broker and restores again
            )
