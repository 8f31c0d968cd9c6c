"""What every committer works with: the instance's clients, writes and partitions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streams.cluster import Topics
from streams.logs import Logger
from streams.pipeline.offsets import Partitions
from streams.pipeline.produce import OutputSink


@dataclass(frozen=True, slots=True)
class CommitContext:
    """The consumer (offsets, group metadata), the cluster's topics (changelogs), the
    sink (its producer writes changelogs and transactions; ``make_producer`` replaces it
    after an outage), the assigned partitions, the time a blocking call may take, and the
    instance's logger."""

    consumer: Any
    topics: Topics
    sink: OutputSink
    make_producer: Callable[[], Any]
    partitions: Partitions
    timeout: float
    log: Logger
