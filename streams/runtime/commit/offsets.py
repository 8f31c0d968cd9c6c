"""At-least-once without state: commit the offsets of finished records.

Every commit interval the outputs are flushed (blocks until the broker acknowledged them
all), then each partition's position is committed asynchronously (a lost asynchronous
commit only means records read again). On revoke and at shutdown the same, committed
synchronously and sent again even if sent before. A write that failed stops the commit
(``DeliveryError``, or ``BrokerUnavailable`` for the runtime to recover): nothing after it
is committed. A failed record is never committed: its partition's position stays before it.
"""

from __future__ import annotations

from collections.abc import Sequence

from confluent_kafka import KafkaError, KafkaException

from streams.coordinates import TP
from streams.pipeline.offsets import PartitionOffsets
from streams.runtime.commit.context import CommitContext
from streams.runtime.commit.positions import settle_outputs


class OffsetCommitter:
    """Implements ``streams.pipeline.commit.Committer`` for stateless at-least-once."""

    def __init__(self, ctx: CommitContext) -> None:
        self._consumer = ctx.consumer
        self._sink = ctx.sink
        self._make_producer = ctx.make_producer
        self._partitions = ctx.partitions
        self._timeout = ctx.timeout
        self._log = ctx.log

    def start(self) -> None:
        return None

    def assigned(self, partitions: Sequence[TP]) -> None:
        return None  # the consumer resumes at the committed offsets by itself

    def revoked(self, partitions: Sequence[TP]) -> None:
        self._final(self._partitions.of(partitions))

    def lost(self, partitions: Sequence[TP]) -> None:
        return None

    def commit(self) -> None:
        if settle_outputs(self._sink, self._timeout, self._log):
            self._sink.raise_errors()
            self._commit(self._partitions.values(), asynchronous=True)

    def send_ahead(self) -> None:
        return None  # nothing but the offsets to commit

    def finish(self, failure: BaseException | None) -> None:
        self._final(self._partitions.values())

    def recover(self) -> None:
        # Settle every write still queued first, so none of them fails after the rewind
        # (which would start a second recovery for the same outage).
        self._sink.flush(self._timeout)
        if self._sink.fatal:
            self._sink.replace_producer(self._make_producer)
        self._sink.reset()
        self._partitions.rewind_to_committed()

    def close(self) -> None:
        return None

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
