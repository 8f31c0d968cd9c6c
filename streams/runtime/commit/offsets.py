"""At-least-once without state: commit the offsets of finished records.

Every commit interval the outputs are flushed (blocks until the broker acknowledged them
all), then each partition's position is committed asynchronously (a lost asynchronous
commit only means records read again). On revoke and at shutdown the same, committed
synchronously and sent again even if sent before. A write that failed stops the commit
(``DeliveryError``, or ``BrokerUnavailable`` for the runtime to recover, or
``OutputsRefused`` for the runtime to ``rewind``): nothing after it is committed. A failed
record is never committed: its partition's position stays before it.
"""

from __future__ import annotations

from collections.abc import Sequence

from confluent_kafka import KafkaError, KafkaException

from streams.coordinates import TP
from streams.pipeline.commit import Committer
from streams.pipeline.offsets import PartitionOffsets
from streams.runtime.commit.context import CommitContext
from streams.runtime.commit.positions import settle_outputs
from streams.runtime.commit.undo import recover_at_least_once


class OffsetCommitter(Committer):
    """Implements ``streams.pipeline.commit.Committer`` for stateless at-least-once: nothing
    to create, restore, send ahead or release (the ``Committer`` defaults)."""

    def __init__(self, ctx: CommitContext) -> None:
        self._ctx = ctx
        self._consumer = ctx.consumer
        self._sink = ctx.sink
        self._partitions = ctx.partitions
        self._timeout = ctx.timeout
        self._log = ctx.log

    def revoked(self, partitions: Sequence[TP]) -> None:
        self._final(self._partitions.of(partitions))

    def commit(self) -> None:
        if settle_outputs(self._sink, self._timeout, self._log):
            self._sink.raise_errors()
            self._commit(self._partitions.values(), asynchronous=True)

    def finish(self, failure: BaseException | None) -> None:
        self._final(self._partitions.values())

    def recover(self) -> None:
        recover_at_least_once(self._ctx, None)

    def rewind(self, exclude: Sequence[TP] = ()) -> None:
        recover_at_least_once(self._ctx, None, exclude)

    def _final(self, partitions: list[PartitionOffsets]) -> None:
        if settle_outputs(self._sink, self._timeout, self._log):
            self._sink.raise_errors()
            self._commit(partitions, asynchronous=False, again=True)

    def _commit(
        self, partitions: list[PartitionOffsets], *, asynchronous: bool, again: bool = False
    ) -> None:
        """Commit each partition's position; ``again``: also positions sent before (an
        asynchronous commit may have failed unseen)."""
        pending = []
        for po in partitions:
            nxt = po.finished() if again else po.pending_commit()
            if nxt is not None:
                pending.append((po, nxt))
        if not pending:
            return
        offsets = [po.commit_offset(nxt) for po, nxt in pending]
        try:
            self._consumer.commit(offsets=offsets, asynchronous=asynchronous)
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            if err.code() != KafkaError._NO_OFFSET:
                # Nothing is lost: uncommitted records are read again (at-least-once).
                self._log.warning("commit failed", error=err.str())
            return
        for po, nxt in pending:
            po.committed_now(nxt)
