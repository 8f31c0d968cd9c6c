"""Reading a dead-letter topic, and measuring its depth.

``read_dlq`` reads a DLQ from its start to the end it had when the call began (bounded,
no consumer group, nothing committed) into memory: DLQs are meant to stay small.
``dlq_depth`` reads only the watermarks. Both ask ``streams.cluster`` for the partitions.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from streams.cluster import TopicError, TopicNotFoundError, admin_client, partition_count
from streams.config import client_config
from streams.dlq.errors import DlqError
from streams.dlq.letters import DeadLetter, DlqContents, ReplayMark, to_dead_letter

Progress = Callable[[int, int], None]
"""Called as ``(done, total)`` while reading or sending."""


def read_dlq(
    bootstrap: str,
    topic: str,
    *,
    timeout: float = 30.0,
    on_progress: Progress | None = None,
    config: Mapping[str, Any] | None = None,
) -> DlqContents:
    """Read ``topic`` from its start to the end it had when the call began.

    Blocks until done. Raises ``DlqError`` when the topic does not exist, or when no
    record arrives for ``timeout`` seconds while some are still expected.
    """
    consumer = Consumer(
        client_config(
            bootstrap,
            config,
            **{
                "group.id": f"streams-dlq-reader-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
            },
        )
    )
    try:
        marks = _watermarks(bootstrap, config, consumer, topic, timeout)
        return _read(consumer, topic, marks, timeout, on_progress)
    except KafkaException as exc:
        raise DlqError(f"cannot read {topic!r}: {exc}") from exc
    finally:
        consumer.close()


def _read(
    consumer: Consumer,
    topic: str,
    watermarks: dict[int, tuple[int, int]],
    timeout: float,
    on_progress: Progress | None,
) -> DlqContents:
    starts = {p: low for p, (low, high) in watermarks.items() if high > low}
    ends = {p: high for p, (low, high) in watermarks.items() if high > low}
    total = sum(ends[p] - starts[p] for p in ends)
    letters: list[DeadLetter] = []
    marks: list[ReplayMark] = []
    done = 0
    if on_progress:
        on_progress(0, total)
    if not ends:
        return DlqContents(topic, ())
    consumer.assign([TopicPartition(topic, p, starts[p]) for p in ends])
    last_progress = time.monotonic()
    while ends:
        batch = consumer.consume(500, timeout=min(1.0, timeout))
        for message in batch:
            partition = message.partition()
            if partition not in ends:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    del ends[partition]
                    continue
                raise DlqError(f"cannot read {topic!r}: {error.str()}")
            offset = message.offset()
            if offset is None or offset >= ends[partition]:
                del ends[partition]
                continue
            item = to_dead_letter(message)
            if isinstance(item, ReplayMark):
                marks.append(item)
            else:
                letters.append(item)
            done += 1
            if offset >= ends[partition] - 1:
                del ends[partition]
        if batch:
            last_progress = time.monotonic()
            if on_progress:
                on_progress(min(done, total), total)
        elif time.monotonic() - last_progress > timeout:
            raise DlqError(f"reading {topic!r} stalled: no record for {timeout:.0f} s")
    letters.sort(key=lambda d: (d.partition, d.offset))
    return DlqContents(topic, tuple(letters), tuple(marks))


def dlq_depth(
    bootstrap: str,
    topic: str,
    *,
    timeout: float = 10.0,
    config: Mapping[str, Any] | None = None,
) -> int:
    """Records in ``topic`` now (end minus start offsets, replay marks included): the
    gauge for monitoring, read from watermarks without consuming. Raises ``DlqError``."""
    consumer = Consumer(client_config(bootstrap, config, **{"group.id": "streams-dlq-depth"}))
    try:
        marks = _watermarks(bootstrap, config, consumer, topic, timeout)
        return sum(max(high - low, 0) for low, high in marks.values())
    except KafkaException as exc:
        raise DlqError(f"cannot measure {topic!r}: {exc}") from exc
    finally:
        consumer.close()


def _watermarks(
    bootstrap: str,
    config: Mapping[str, Any] | None,
    consumer: Consumer,
    topic: str,
    timeout: float,
) -> dict[int, tuple[int, int]]:
    """The (start, end) offsets of each partition of ``topic``."""
    try:
        count = partition_count(admin_client(bootstrap, config), topic, timeout)
    except TopicNotFoundError as exc:
        raise DlqError(f"no topic {topic!r} (is the app id or topic name right?)") from exc
    except TopicError as exc:
        raise DlqError(str(exc)) from exc
    return {
        partition: consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout)
        for partition in range(count)
    }
