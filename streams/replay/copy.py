"""Copy a planned range of a topic into another topic (or only count it: a dry run).

The copy keeps each record's key, value and headers, adds a ``streams.replay.of`` header
(``<topic>/<partition>/<offset>`` of the original), and by default lets the target
partition by key with Kafka's own partitioner (murmur2, as Java clients), so keys land
where any Kafka producer would put them; ``keep_partition`` copies partition to partition.
With an OpenTelemetry SDK set up, each copy starts a new trace whose span links to the
original's context (``streams.observability.tracing``); without, headers pass untouched.

Timing: ``replay`` blocks until every partition's range has been read and every copy is
acknowledged by the target (idempotent producer, ``acks=all``, flushed at the end). Only
then does it return; a copy the broker refused raises ``CopyError`` (the partial copy
stays: Kafka cannot take records back). Offsets of the source are never committed.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition

from streams.cluster import Cluster, TopicNotFoundError
from streams.config import bounded_prefetch
from streams.observability.tracing import tracing
from streams.replay.errors import CopyError, ReplayError
from streams.replay.filters import Headers, RecordFilter
from streams.replay.plan import ReplayPlan

if TYPE_CHECKING:
    from streams.failures.headers import Header
    from streams.observability.otel import Tracing

# The same header `streams dlq replay` sets: every copy names its original.
REPLAY_HEADER = "streams.replay.of"
REPLAY_TIMESTAMP_HEADER = "streams.replay.original_timestamp"  # epoch ms, as text
BATCH = 2000
FLUSH_TIMEOUT = 60.0

Progress = Callable[[int], None]


@dataclass(slots=True)
class PartitionResult:
    """What happened in one partition: offsets ``[start, end)``, records read and copied."""

    partition: int
    start: int
    end: int
    read: int = 0
    copied: int = 0


@dataclass(slots=True)
class ReplayResult:
    """The outcome of ``replay``: per partition, and totals. ``copied`` counts records
    acknowledged by the target (or, in a dry run, that would have been copied)."""

    topic: str
    into: str | None
    dry_run: bool
    partitions: list[PartitionResult]
    seconds: float = 0.0
    filter: str = "none"

    @property
    def read(self) -> int:
        return sum(p.read for p in self.partitions)

    @property
    def copied(self) -> int:
        return sum(p.copied for p in self.partitions)

    def as_dict(self) -> dict[str, object]:
        return {
            "topic": self.topic,
            "into": self.into,
            "dry_run": self.dry_run,
            "filter": self.filter,
            "read": self.read,
            "copied": self.copied,
            "seconds": round(self.seconds, 3),
            "partitions": [
                {"partition": p.partition, "start": p.start, "end": p.end, "read": p.read,
                 "copied": p.copied}
                for p in self.partitions
            ],
        }  # fmt: skip


@dataclass(slots=True)
class _Acks:
    """Failed deliveries of the copy. The producer reports only errors
    (``delivery.report.only.error``), so a success costs no Python call; a copy is
    acknowledged when ``flush`` returns with nothing left and nothing failed."""

    failed: int = 0
    first_error: str | None = None

    def __call__(self, err: KafkaError | None, msg: Message) -> None:
        if err is None:
            return
        self.failed += 1
        if self.first_error is None:
            self.first_error = err.str()


def check_target(
    cluster: Cluster, plan: ReplayPlan, into: str, *, force: bool, keep_partition: bool
) -> None:
    """Refuse a replay into its own source (unless ``force``), into a missing topic, or
    partition to partition into a topic with fewer partitions."""
    if into == plan.topic and not force:
        raise ReplayError(
            f"refusing to replay {plan.topic!r} into itself: every copy would be read again "
            "by its consumers (pass --force if you mean it)"
        )
    try:
        target_partitions = cluster.partition_count(into)
    except TopicNotFoundError:
        raise TopicNotFoundError(f"target topic {into!r} does not exist: create it first") from None
    if keep_partition:
        needed = max((r.partition for r in plan.ranges), default=-1) + 1
        if target_partitions < needed:
            raise ReplayError(
                f"--keep-partition needs {needed} partitions in {into!r}, it has "
                f"{target_partitions}"
            )


def _consumer(cluster: Cluster) -> Consumer:
    return Consumer(
        cluster.client_config(
            **{
                # never joined nor committed (we assign): the id only satisfies the client
                "group.id": f"streams-replay-{uuid.uuid4().hex[:12]}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "enable.partition.eof": True,
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "fetch.max.bytes": 52_428_800,
                **bounded_prefetch(65_536),
            }
        )
    )


def _producer(cluster: Cluster, acks: _Acks) -> Producer:
    return Producer(
        cluster.client_config(
            **{
                "on_delivery": acks,
                "delivery.report.only.error": True,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 20,
                "batch.size": 1_000_000,
                "compression.type": "lz4",
                "partitioner": "murmur2_random",  # Java's default: same key, same partition
            }
        )
    )


def replay(
    cluster: Cluster,
    plan: ReplayPlan,
    into: str | None,
    *,
    record_filter: RecordFilter | None = None,
    keep_partition: bool = False,
    keep_timestamps: bool = False,
    dry_run: bool = False,
    force: bool = False,
    progress: Progress | None = None,
    flush_timeout: float = FLUSH_TIMEOUT,
) -> ReplayResult:
    """Copy every record of ``plan`` that passes ``record_filter`` into ``into``.

    ``dry_run`` reads the range and counts what would be copied; nothing is written
    (``into`` may then be None; a target given is checked as for the copy). ``progress``
    gets the number of offsets consumed since its last call, once per batch.
    ``keep_timestamps`` gives copies their original timestamps (else the time of the
    copy; the original is always in the header ``streams.replay.original_timestamp``).
    Raises ``ReplayError`` for a bad target, ``CopyError`` when the target did not
    acknowledge every copy within ``flush_timeout`` after the last read.
    """
    flt = record_filter or RecordFilter()
    if into is None and not dry_run:
        raise ReplayError("a replay needs a target topic (--into), or --dry-run")
    if into is not None:  # a dry run refuses what the copy would refuse
        check_target(cluster, plan, into, force=force, keep_partition=keep_partition)
    results = {r.partition: PartitionResult(r.partition, r.start, r.end) for r in plan.ranges}
    result = ReplayResult(plan.topic, into, dry_run, list(results.values()), filter=str(flt))
    todo = {r.partition: r for r in plan.ranges if r.size > 0}
    if not todo:
        return result
    started = time.perf_counter()
    consumer = _consumer(cluster)
    acks = _Acks()
    producer = None if dry_run else _producer(cluster, acks)
    copier = _Copier(plan.topic, into or "", producer, flt, keep_partition, keep_timestamps, acks)
    copier.tracing = None if dry_run else tracing()
    try:
        consumer.incremental_assign(
            [TopicPartition(plan.topic, p, r.start) for p, r in todo.items()]
        )
        copier.run(consumer, {p: r.end for p, r in todo.items()}, results, progress)
    finally:
        consumer.close()
        if producer is not None:
            left = producer.flush(flush_timeout)
            if left or acks.failed:
                raise CopyError(
                    f"{acks.failed + left} of {result.copied} copies into {into!r} were not "
                    f"acknowledged ({acks.first_error or f'{left} still in flight'})"
                )
    result.seconds = time.perf_counter() - started
    return result


@dataclass(slots=True)
class _Copier:
    """The hot loop: consume a batch, filter, produce, until every range is read."""

    topic: str
    into: str
    producer: Producer | None
    flt: RecordFilter
    keep_partition: bool
    keep_timestamps: bool
    acks: _Acks
    tracing: Tracing | None = None  # each copy in a span linked to its original

    def run(
        self,
        consumer: Consumer,
        ends: dict[int, int],
        results: dict[int, PartitionResult],
        progress: Progress | None,
    ) -> None:
        """Consume until each partition in ``ends`` reaches its end (a record at or past
        it, or the end of the log), producing each kept record. Mutates ``results``."""
        everything = self.flt.everything
        producer = self.producer
        while ends:
            done: set[int] = set()
            consumed = 0
            for msg in consumer.consume(BATCH, timeout=0.2):
                p: int = msg.partition()  # type: ignore[assignment]
                end = ends.get(p)
                if end is None:
                    continue  # already finished: records fetched before the unassign
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        done.add(p)  # the whole log is read; the range ends at or before it
                        continue
                    raise ReplayError(f"reading {self.topic}:{p} failed: {err.str()}")
                offset: int = msg.offset()  # type: ignore[assignment]
                if offset >= end:
                    done.add(p)
                    continue
                consumed += 1
                res = results[p]
                res.read += 1
                headers: Headers = msg.headers()  # type: ignore[assignment]
                if everything or self.flt.matches(msg.key(), headers):
                    res.copied += 1
                    if producer is not None:
                        self._produce(producer, msg, p, offset, headers)
                if offset + 1 >= end:
                    done.add(p)
            finished = [
                TopicPartition(self.topic, p) for p in done if ends.pop(p, None) is not None
            ]
            if finished:
                consumer.incremental_unassign(finished)
            if producer is not None:
                producer.poll(0)  # serve delivery reports
                if self.acks.failed:
                    return  # stop copying: ``replay`` flushes, then raises CopyError
            if progress is not None and consumed:
                progress(consumed)

    def _produce(
        self, producer: Producer, msg: Message, partition: int, offset: int, headers: Headers
    ) -> None:
        ts = msg.timestamp()[1]
        out: list[tuple[str, str | bytes | None]] = list(headers) if headers else []
        ref = f"{self.topic}/{partition}/{offset}"
        out.append((REPLAY_HEADER, ref.encode()))
        out.append((REPLAY_TIMESTAMP_HEADER, str(ts).encode()))
        if self.tracing is not None:
            out = list(self.tracing.copied(cast("list[Header]", out), self.into, ref))
        # -1: the partitioner picks (by key); 0: the broker's clock stamps the copy
        to_partition = partition if self.keep_partition else -1
        stamp = ts if self.keep_timestamps and ts > 0 else 0
        key, value, into = msg.key(), msg.value(), self.into
        while True:
            try:
                producer.produce(into, value, key, partition=to_partition, timestamp=stamp,
                                 headers=out)  # fmt: skip
                return
            except BufferError:  # the local queue is full: wait for deliveries to drain
                producer.poll(0.1)
