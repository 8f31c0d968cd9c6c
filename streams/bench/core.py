"""Shared pieces of the benchmark: the context each section gets, and result rows."""

from __future__ import annotations

import resource
from dataclasses import dataclass, field

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
