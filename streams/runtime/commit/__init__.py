"""The runtime's committers: what a commit makes durable, one file per way.

- ``offsets.OffsetCommitter``: at-least-once without state. Offsets of finished records
  are committed asynchronously every commit interval, synchronously on revoke and at
  shutdown.
- ``checkpoint.CheckpointCommitter``: at-least-once with stores. Each commit is a
  checkpoint: outputs acknowledged, store changes written to their changelogs and
  acknowledged, input offsets committed, then the changes applied to the local stores.
- ``transaction.TransactionCommitter``: exactly-once. Outputs, changelog records and
  input offsets commit in one transaction; an aborted one rewinds every partition.

All implement ``streams.pipeline.commit.Committer``; ``make_committer`` picks one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streams.logs import Logger
from streams.pipeline.commit import Committer
from streams.pipeline.offsets import Partitions
from streams.pipeline.produce import OutputSink
from streams.runtime.commit.checkpoint import CheckpointCommitter
from streams.runtime.commit.offsets import OffsetCommitter
from streams.runtime.commit.transaction import (
    ProducerFencedError,
    TransactionCommitter,
    TransactionError,
)
from streams.state import StateManager

__all__ = [
    "CheckpointCommitter",
    "OffsetCommitter",
    "ProducerFencedError",
    "TransactionCommitter",
    "TransactionError",
    "make_committer",
]


def make_committer(
    *,
    exactly_once: bool,
    consumer: Any,
    admin: Any,
    sink: OutputSink,
    make_producer: Callable[[], Any],
    partitions: Partitions,
    state: StateManager | None,
    transactional_id: str | None,
    timeout: float,
    log: Logger,
) -> Committer:
    """The committer for a guarantee and a state (see the module docstring)."""
    if exactly_once:
        return TransactionCommitter(
            consumer=consumer,
            admin=admin,
            sink=sink,
            make_producer=make_producer,
            partitions=partitions,
            state=state,
            transactional_id=transactional_id or "",
            timeout=timeout,
            log=log,
        )
    if state is not None:
        return CheckpointCommitter(
            consumer=consumer,
            admin=admin,
            sink=sink,
            make_producer=make_producer,
            partitions=partitions,
            state=state,
            timeout=timeout,
            log=log,
        )
    return OffsetCommitter(
        consumer=consumer,
        sink=sink,
        make_producer=make_producer,
        partitions=partitions,
        timeout=timeout,
        log=log,
    )
