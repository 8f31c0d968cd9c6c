"""The runtime's committers: what a commit makes durable, one file per way.

- ``offsets.OffsetCommitter``: at-least-once without state. Offsets of finished records
  are committed asynchronously every commit interval, synchronously on revoke and at
  shutdown.
- ``checkpoint.CheckpointCommitter``: at-least-once with stores. Each commit is a
  checkpoint: outputs acknowledged, store changes written to their changelogs and
  acknowledged, input offsets committed, then the changes applied to the local stores.
- ``transaction.TransactionCommitter``: exactly-once. Outputs, changelog records and
  input offsets commit in one transaction; an aborted one rewinds every partition.

All implement ``streams.pipeline.commit.Committer``; ``make_committer`` picks one. What
they undo after an outage or an abort is the same for all three (``undo``); the two with
stores restore them on assignment, and again after an outage that interrupted it
(``stores``).
"""

from __future__ import annotations

from streams.pipeline.commit import Committer
from streams.runtime.commit.checkpoint import CheckpointCommitter
from streams.runtime.commit.context import CommitContext
from streams.runtime.commit.offsets import OffsetCommitter
from streams.runtime.commit.transaction import (
    ProducerFencedError,
    TransactionCommitter,
    TransactionError,
)
from streams.state import StateManager

__all__ = [
    "CheckpointCommitter",
    "CommitContext",
    "OffsetCommitter",
    "ProducerFencedError",
    "TransactionCommitter",
    "TransactionError",
    "make_committer",
]


def make_committer(
    ctx: CommitContext,
    state: StateManager | None,
    transactional_id: str | None,
    *,
    transaction_timeout_s: float,
) -> Committer:
    """The committer for a guarantee (exactly-once when given a ``transactional_id``, its
    producer's ``transaction.timeout.ms`` as ``transaction_timeout_s``) and a state (see
    the module docstring)."""
    if transactional_id is not None:
        return TransactionCommitter(
            ctx, state, transactional_id, transaction_timeout_s=transaction_timeout_s
        )
    if state is not None:
        return CheckpointCommitter(ctx, state)
    return OffsetCommitter(ctx)
