"""At-least-once with stores: every commit is a checkpoint.

Store changes go to their changelogs as they are made (``send_ahead``, every poll), tagged
with the input position they reflect (``streams.runtime.commit.positions``), without
waiting. A checkpoint (every commit interval, on revoke, at shutdown) runs in this order,
each step blocking until done: the store changes not sent yet produced; outputs and
changelog records flushed and acknowledged, in one wait (a failed output raises, nothing
commits; a failed changelog record raises ``ChangelogWriteError``); the input offsets
committed synchronously; then the changes handed to the local stores, which write them a
chunk per poll (``StateManager.apply_some``) rather than all at once. A crash anywhere
leaves the local stores never ahead of the committed input, and the changelog tags let a
restore skip what a crash left uncommitted.

A changelog write that fails raises ``ChangelogWriteError``: nothing of that checkpoint
is committed, the changes are dropped and no stateful commit happens again in this run
(the runtime stops; a restart restores from the changelog).

Assignment restores the stores of the new partitions up to their committed offsets
before any of their records is processed (blocks for the restores).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from confluent_kafka import KafkaException

from streams.coordinates import TP
from streams.pipeline.commit import Committer
from streams.pipeline.errors import OutputsRefused
from streams.pipeline.offsets import PartitionOffsets
from streams.runtime.commit.context import CommitContext
from streams.runtime.commit.positions import (
    apply_committed,
    finished_positions,
    mark_committed,
    moved_offsets,
    settle_changelog,
    settle_outputs,
)
from streams.runtime.commit.stores import ensure_changelogs, restore
from streams.runtime.commit.undo import recover_at_least_once
from streams.state import StateError, StateManager


class Phase(Enum):
    RUNNING = "running"
    BROKEN = "broken"  # a checkpoint's changelog write failed: nothing stateful commits
    STOPPED = "stopped"  # finished: the revoke that closing the consumer causes is a no-op


class CheckpointCommitter(Committer):
    """Implements ``streams.pipeline.commit.Committer`` for at-least-once with stores."""

    def __init__(self, ctx: CommitContext, state: StateManager) -> None:
        self._ctx = ctx
        self._consumer = ctx.consumer
        self._topics = ctx.topics
        self._sink = ctx.sink
        self._partitions = ctx.partitions
        self._state = state
        self._timeout = ctx.timeout
        self._log = ctx.log
        self._phase = Phase.RUNNING
        self.commits = 0

    def start(self) -> None:
        """Create or validate every changelog (``ChangelogTopicError`` when one cannot back
        its store: nothing is processed)."""
        ensure_changelogs(self._topics, self._state)

    def assigned(self, partitions: Sequence[TP]) -> None:
        restore(self._partitions, self._state, partitions)

    def revoked(self, partitions: Sequence[TP]) -> None:
        try:
            if self._phase is Phase.RUNNING:
                self._checkpoint(self._partitions.of(partitions))
        except OutputsRefused:
            # Nothing of the interval commits: the next owner does it again. What the
            # leaving partitions sent ahead is written back before their stores close (the
            # runtime's rewind does the others').
            self._write_back(partitions)
            raise
        finally:
            for topic, partition in partitions:
                self._state.revoke(topic, partition, keep=True)

    def lost(self, partitions: Sequence[TP]) -> None:
        for topic, partition in partitions:
            self._state.revoke(topic, partition, keep=True)

    def commit(self) -> None:
        if self._phase is Phase.RUNNING:
            self._checkpoint(self._partitions.values())

    def send_ahead(self) -> None:
        state = self._state
        if self._phase is Phase.RUNNING:
            if state.unsent():
                positions = finished_positions(self._partitions.values(), state)
                state.send(self._sink.producer, positions)
            state.apply_some()  # the last checkpoint's changes, a chunk at a time

    def finish(self, failure: BaseException | None) -> None:
        try:
            self.commit()  # a failed record's partition is left out by itself
        finally:
            self._phase = Phase.STOPPED

    def recover(self) -> None:
        recover_at_least_once(self._ctx, self._state)

    def rewind(self, exclude: Sequence[TP] = ()) -> None:
        recover_at_least_once(self._ctx, self._state, exclude)

    def _write_back(self, partitions: Sequence[TP]) -> None:
        """Undo the store changes and write the committed entries of the keys the
        changelogs of ``partitions`` hold undone changes of (``undo``'s module docstring),
        tagged with their committed offsets, and wait for them."""
        state = self._state
        state.abort(rewrite_sent=True)
        committed = {
            (po.topic, po.partition): po.committed if po.committed is not None else -1
            for po in self._partitions.of(partitions)
        }
        if state.send(self._sink.producer, committed):
            self._sink.flush(self._timeout)

    def _checkpoint(self, partitions: list[PartitionOffsets]) -> None:
        # The store changes not sent yet go out first, so that one wait settles them with
        # the outputs (each wait is a broker round trip, and the loop is stopped meanwhile).
        self.send_ahead()
        if not settle_outputs(self._sink, self._timeout, self._log):
            return
        self._sink.raise_errors()  # a failed write: nothing of this interval commits
        state = self._state
        positions = finished_positions(partitions, state)
        if not positions:
            return
        try:
            if state.flush(self._sink.producer, positions):
                settle_changelog(self._sink, state, self._timeout)
        except StateError:
            self._phase = Phase.BROKEN
            state.abort()
            raise
        offsets = moved_offsets(partitions, positions)
        if offsets:
            try:
                self._consumer.commit(offsets=offsets, asynchronous=False)
            except KafkaException as exc:
                # The records are not read again in this run, so their changes still apply
                # (a crash now rebuilds the store from the changelog: never ahead of input).
                self._log.warning("commit failed", error=exc.args[0].str())
            else:
                mark_committed(partitions, offsets)
        apply_committed(self._sink, state)
        self.commits += 1
