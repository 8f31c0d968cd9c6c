"""Counters of one instance, kept by the steps that see what they count. Never per-record
logging: the runtime shows them in a status line and a periodic log line."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Stats:
    consumed: int = 0  # records tracked (``Track``)
    produced: int = 0  # outputs sent (``Produce``)
    skipped: int = 0  # records a SKIP error policy let go
    partitions: int = 0  # assigned: inputs, repartition topics, retry tiers
    input_partitions: int = 0  # assigned partitions of the topics the user named as inputs
    lag: int | None = None
    rebalances: int = 0
    rebalance_seconds: float = 0.0  # time spent in the rebalance callbacks
    partitions_lost: int = 0  # partitions taken away without a revoke (session timed out)
    duplicates: int = 0  # records dropped by dedup steps
    timers: int = 0  # timer runs (one per timer, moment and partition)
    timer_failures: int = 0  # timer runs that raised (undone, logged)
    refusals: int = 0  # work done again without records whose outputs the broker refused
    # Failure routing counters (retried, recovered, dead_lettered, dlq_depth, by_error).
    failures: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
