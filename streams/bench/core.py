"""Shared pieces of the benchmark: the context each section gets, and result rows."""

from __future__ import annotations

import resource
import signal
import subprocess
import time
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from streams.admin import admin_client, create_topic, delete_topics
from streams.testing.topics import unique_topic_name


@dataclass(frozen=True)
class Row:
    """One figure. ``baseline`` is the matching bare-client figure, for a ratio."""

    section: str
    name: str
    value: float
    unit: str
    baseline: float | None = None
    target: float | None = None  # the ratio the issue asks for, shown beside it
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.baseline in (None, 0):
            return None
        return self.value / self.baseline


@dataclass
class BenchContext:
    bootstrap: str
    records: int = 200_000
    quick: bool = False
    _topics: list[str] = field(default_factory=list)

    @property
    def admin(self) -> AdminClient:
        return admin_client(self.bootstrap)

    def topic(self, hint: str, partitions: int = 4) -> str:
        name = unique_topic_name(f"bench-{hint}")
        create_topic(self.admin, name, partitions=partitions)
        self._topics.append(name)
        return name

    def cleanup(self) -> None:
        delete_topics(self.admin, self._topics)
        self._topics.clear()


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _end_offsets(consumer: Consumer, topics: list[str], partitions: int) -> int:
    """Records written to ``topics`` so far (sum of end offsets); -1 when not readable yet."""
    total = 0
    for topic in topics:
        for p in range(partitions):
            try:
                _low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5)
            except KafkaException:  # transient right after creation (no leader yet): ask again
                return -1
            total += max(high, 0)
    return total


def watch_outputs(
    bootstrap: str, topics: list[str], target: int, *, partitions: int, timeout: float = 600
) -> float:
    """Seconds from the first output record to ``target`` records, seen via end offsets.

    Reading end offsets costs the pipeline under test nothing, unlike consuming its output.
    """
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-watch"})
    try:
        deadline = time.monotonic() + timeout
        first: float | None = None
        while time.monotonic() < deadline:
            n = _end_offsets(consumer, topics, partitions)
            now = time.perf_counter()
            if n > 0 and first is None:
                first = now
            if n >= target and first is not None:
                return max(now - first, 1e-6)
            time.sleep(0.02)  # polling interval of the watcher, not a synchronisation
        seen = _end_offsets(consumer, topics, partitions)
        raise RuntimeError(f"only {seen} of {target} outputs arrived")
    finally:
        consumer.close()


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (a graceful stop), then SIGKILL if it has not exited within 60 s."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
