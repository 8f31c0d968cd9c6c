"""Wait for something real to happen, with a deadline: never a bare sleep.

``wait_until`` polls any condition; ``caught_up`` is one: a consumer group (an app) has
committed every record of a topic. ``TopicReader`` reads a topic from the beginning of
every partition (no consumer group, nothing committed) and ``wait_for_records`` /
``wait_for`` block until the topic holds what a test expects. On timeout they raise
``WaitTimeoutError`` (an ``AssertionError``, so pytest reports a failed expectation) whose
message shows what was seen.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from typing import TypeVar

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    Message,
    TopicPartition,
)

from streams.cluster import Cluster
from streams.errors import StreamsError
from streams.replay import lag

T = TypeVar("T")

DEFAULT_TIMEOUT = 30.0
_SHOWN = 5  # records quoted in a timeout message


class WaitTimeoutError(StreamsError, AssertionError):
    """A condition a test waited for did not hold in time; the message says what was seen."""


def caught_up(bootstrap: str, group: str, topic: str) -> bool:
    """Whether ``group`` (an app id) has committed the end of every partition of
    ``topic``: everything written there so far is processed. False while the broker does
    not answer. ``wait_until(lambda: caught_up(...))`` waits for it."""
    try:
        return lag.caught_up(Cluster(bootstrap, 10), group, [topic])
    except StreamsError:  # the broker away, the topic not there yet
        return False


def wait_until(
    condition: Callable[[], T | None],
    timeout: float = DEFAULT_TIMEOUT,
    *,
    interval: float = 0.1,
    what: str = "the condition",
    seen: Callable[[], str] | None = None,
) -> T:
    """Call ``condition()`` until it returns something truthy, and return that (typed
    without None: a condition that returns ``int | None`` gives an ``int``).

    Blocks up to ``timeout`` seconds, calling every ``interval`` seconds. Raises
    ``WaitTimeoutError`` naming ``what`` and, when given, ``seen()`` (the state at the end).
    Exceptions from ``condition`` propagate at once.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() >= deadline:
            detail = f"; seen: {seen()}" if seen is not None else ""
            raise WaitTimeoutError(f"{what} did not hold within {timeout:g} s{detail}")
        time.sleep(interval)


def describe_record(msg: Message, width: int = 80) -> str:
    """``partition@offset key=... value=...``, the value cut to ``width`` characters."""
    key = msg.key()
    value = msg.value()
    shown_value = repr(value if value is None or len(value) <= width else value[:width] + b"...")
    return f"{msg.partition()}@{msg.offset()} key={key!r} value={shown_value}"


class TopicReader:
    """Reads every partition of ``topic`` from its beginning, accumulating ``records``.

    Not a consumer group member: it assigns partitions itself and commits nothing, so it
    never disturbs the application under test. A topic that does not exist yet is waited
    for (an application may create its outputs on start). Close it, or use ``with``.
    """

    def __init__(self, bootstrap: str, topic: str, *, config: dict[str, object] | None = None):
        self.topic = topic
        self.records: list[Message] = []
        self._assigned = False
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"streams-testing-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "enable.partition.eof": False,
                "log_level": 0,
                **(config or {}),
            }
        )

    def __enter__(self) -> TopicReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._consumer.close()

    def poll(self, timeout: float = 0.2) -> list[Message]:
        """Read what arrived within ``timeout`` seconds; returns the new records."""
        if not self._assigned and not self._assign():
            time.sleep(min(timeout, 0.2))  # the topic does not exist yet: look again later
            return []
        batch = self._consumer.consume(num_messages=500, timeout=timeout)
        fresh = []
        for msg in batch:
            err = msg.error()
            if err is None:
                fresh.append(msg)
            elif err.code() != KafkaError._PARTITION_EOF:
                raise StreamsError(f"reading {self.topic}: {err.str()}")
        self.records.extend(fresh)
        return fresh

    def _assign(self) -> bool:
        meta = self._consumer.list_topics(self.topic, timeout=5.0).topics.get(self.topic)
        if meta is None or meta.error is not None or not meta.partitions:
            return False
        self._consumer.assign(
            [TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in sorted(meta.partitions)]
        )
        self._assigned = True
        return True

    def wait_for(
        self,
        predicate: Callable[[Sequence[Message]], bool],
        timeout: float = DEFAULT_TIMEOUT,
        *,
        what: str | None = None,
    ) -> list[Message]:
        """Read until ``predicate(records)`` holds for all records read so far; return them.

        Raises ``WaitTimeoutError`` after ``timeout`` seconds, quoting the last records seen.
        """
        deadline = time.monotonic() + timeout
        while True:
            if predicate(self.records):
                return list(self.records)
            left = deadline - time.monotonic()
            if left <= 0:
                raise WaitTimeoutError(
                    f"{what or 'the expected records'} in topic {self.topic!r} did not arrive "
                    f"within {timeout:g} s; {self.summary()}"
                )
            self.poll(timeout=min(left, 0.5))

    def summary(self) -> str:
        if not self._assigned:
            return "the topic does not exist"
        if not self.records:
            return "seen 0 records"
        last = "\n  ".join(describe_record(m) for m in self.records[-_SHOWN:])
        return f"seen {len(self.records)} records, the last ones:\n  {last}"


def wait_for_records(
    bootstrap: str,
    topic: str,
    count: int,
    timeout: float = DEFAULT_TIMEOUT,
    *,
    match: Callable[[Message], bool] | None = None,
) -> list[Message]:
    """Block until ``topic`` holds at least ``count`` records (that ``match``, if given).

    Returns the first ``count`` of them in the order read (per partition: offset order).
    Raises ``WaitTimeoutError`` after ``timeout`` seconds, quoting what was seen.
    """

    def matching(records: Sequence[Message]) -> list[Message]:
        return [m for m in records if match is None or match(m)]

    with TopicReader(bootstrap, topic) as reader:
        what = f"{count} records" + (" matching the filter" if match else "")
        records = reader.wait_for(lambda rs: len(matching(rs)) >= count, timeout, what=what)
    return matching(records)[:count]


def wait_for(
    bootstrap: str,
    topic: str,
    predicate: Callable[[Sequence[Message]], bool],
    timeout: float = DEFAULT_TIMEOUT,
    *,
    what: str | None = None,
) -> list[Message]:
    """Block until ``predicate`` holds for the records of ``topic``; return them all."""
    with TopicReader(bootstrap, topic) as reader:
        return reader.wait_for(predicate, timeout, what=what)
