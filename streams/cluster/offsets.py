"""Offsets on a cluster: a partition's log start and end, offsets for a time, the time of
a record, and a consumer group's committed offsets (read and moved).

Each function takes the ``Cluster`` that asks (its deadline, its retries, its errors) and
is one of its methods: ``cluster.list_offsets(...)`` is ``list_offsets(cluster, ...)``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

from streams.cluster.errors import MOVING, ClusterError
from streams.cluster.groups import describe_group
from streams.coordinates import TP

if TYPE_CHECKING:
    from streams.cluster.connection import Cluster

EOF = KafkaError._PARTITION_EOF
OffsetKind = Literal["earliest", "latest"] | int


def _offset_spec(at: OffsetKind) -> Any:
    if at == "earliest":
        return OffsetSpec.earliest()  # type: ignore[no-untyped-call]
    if at == "latest":
        return OffsetSpec.latest()  # type: ignore[no-untyped-call]
    return OffsetSpec.for_timestamp(at)


def list_offsets(
    cluster: Cluster,
    partitions: Iterable[TP],
    at: OffsetKind,
    *,
    read_committed: bool = False,
) -> dict[TP, int]:
    """The broker's ListOffsets answer per partition: the log start (``"earliest"``),
    the log end (``"latest"``), or for a time in epoch ms (offsets-for-times: -1 when
    no record is that recent)."""
    spec = _offset_spec(at)
    request = {TopicPartition(t, p): spec for t, p in partitions}
    if not request:
        return {}
    isolation = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
    results = cluster.request(
        "list offsets",
        lambda: cluster.admin.list_offsets(
            request, isolation_level=isolation, request_timeout=cluster.timeout
        ),
    )
    return {(tp.topic, tp.partition): info.offset for tp, info in results.items()}


def _first_messages(cluster: Cluster, offsets: Mapping[TP, int]) -> dict[TP, Any]:
    """The first message at or after each offset, read committed, with one consumer assigned
    there: a record, or the partition's end event (``_PARTITION_EOF``, its offset the end)
    when only transaction markers or nothing lie after it. One fetch per partition, every
    partition within ``timeout`` together; a partition without an answer in time is left
    out."""
    if not offsets:
        return {}
    cluster.check()
    consumer = Consumer(
        cluster.client_config(
            **{
                "group.id": "streams-record-times",  # never joined, never committed
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "isolation.level": "read_committed",
                "fetch.max.bytes": 1024 * 1024,
            }
        )
    )
    found: dict[TP, Any] = {}
    waiting = set(offsets)
    try:
        consumer.assign([TopicPartition(t, p, o) for (t, p), o in offsets.items()])
        deadline = time.monotonic() + cluster.timeout
        while waiting and (left := deadline - time.monotonic()) > 0:
            for msg in consumer.consume(500, timeout=min(left, 0.5)):
                key = (msg.topic(), msg.partition())
                if key not in waiting:
                    continue
                waiting.discard(key)  # its first record, or its end
                consumer.pause([TopicPartition(*key)])  # nothing more from it
                found[key] = msg
    finally:
        consumer.close()
    return found


def record_times(cluster: Cluster, offsets: Mapping[TP, int]) -> dict[TP, int | None]:
    """The timestamp (epoch ms) of the record at each offset (the first one after it,
    where it is gone). None for a partition with no record from that offset to its end:
    read committed, so what lies there is only transaction markers or aborted records,
    nothing a consumer gets. A partition whose record was not read in time (or has no
    timestamp) is left out."""
    found: dict[TP, int | None] = {}
    for key, msg in _first_messages(cluster, offsets).items():
        error = msg.error()
        kind, ms = msg.timestamp()
        if error is not None and error.code() == EOF:
            found[key] = None
        elif error is None and kind and ms >= 0:
            found[key] = ms
    return found


def records_before(cluster: Cluster, spans: Mapping[TP, tuple[int, int]]) -> set[TP]:
    """The partitions with a record in their span ``(start, end)``, read committed: a
    span of transaction markers only (where an exactly-once writer's log ends) holds
    none, though its offsets differ. A partition that did not answer in time counts as
    holding one."""
    asked = {tp: start for tp, (start, end) in spans.items() if start < end}
    first = _first_messages(cluster, asked)
    return {tp for tp in asked if not _past(first.get(tp), spans[tp][1])}


def _past(msg: Any, end: int) -> bool:
    """Whether the first message read is the partition's end or a record at ``end`` on."""
    if msg is None:
        return False
    if msg.error() is not None:
        return bool(msg.error().code() == EOF)
    return bool(msg.offset() >= end)


def committed(
    cluster: Cluster, group: str, partitions: Sequence[TP] | None = None
) -> dict[TP, int]:
    """The group's committed offsets (all of them, or for ``partitions``); partitions
    without a commit are left out."""
    cluster.check()
    if partitions is not None:
        return _fetch_committed(cluster, group, partitions)
    # librdkafka 2.16's ListConsumerGroupOffsets crashes the process (a segfault in
    # its response handler) for a group the cluster has no offsets of on a cluster
    # without __consumer_offsets yet: asked of groups that exist only.
    if not describe_group(cluster, group).exists:
        return {}
    request = [ConsumerGroupTopicPartitions(group, None)]
    result = cluster.request(
        f"list offsets of group {group!r}",
        lambda: cluster.admin.list_consumer_group_offsets(request, request_timeout=cluster.timeout),
    )[group]
    return {
        (tp.topic, tp.partition): tp.offset
        for tp in result.topic_partitions
        if tp.offset >= 0 and tp.error is None
    }


def _fetch_committed(cluster: Cluster, group: str, partitions: Sequence[TP]) -> dict[TP, int]:
    """``committed`` for known partitions: an OffsetFetch by a consumer of the group
    that never joins it (no admin request, see ``committed``)."""
    consumer = Consumer(cluster.client_config(**{"group.id": group, "enable.auto.commit": False}))
    try:
        tps = [TopicPartition(t, p) for t, p in partitions]
        found = cluster.ask(
            f"list offsets of group {group!r}",
            lambda: consumer.committed(tps, timeout=cluster.timeout),
        )
    finally:
        consumer.close()
    return {
        (tp.topic, tp.partition): tp.offset for tp in found if tp.offset >= 0 and tp.error is None
    }


def alter_committed(cluster: Cluster, group: str, offsets: Mapping[TP, int]) -> None:
    """Commit ``offsets`` for ``group`` (the group must have no active members)."""
    request = [
        ConsumerGroupTopicPartitions(
            group, [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
        )
    ]
    what = f"commit offsets of group {group!r}"

    def commit() -> list[Any]:  # TopicPartitions with an error
        result = cluster.request(
            what,
            lambda: cluster.admin.alter_consumer_group_offsets(
                request, request_timeout=cluster.timeout
            ),
        )[group]
        failed = [tp for tp in result.topic_partitions if tp.error is not None]
        if failed and failed[0].error.code() in MOVING:
            # A fresh cluster's coordinator answers per partition: asked again.
            raise KafkaException(failed[0].error)
        return failed

    failed = cluster.ask(what, commit)
    if failed:
        tp = failed[0]
        raise ClusterError(
            f"commit offsets of group {group!r} failed on {tp.topic}:{tp.partition}: "
            f"{tp.error.str()}"
        )
