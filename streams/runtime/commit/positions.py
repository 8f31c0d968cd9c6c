"""What a commit covers: the finished position of each partition, and the changelogs.

Shared by the checkpoint and transaction committers. Only the stateless offsets
committer does without: it has no store whose changes must go with an offset.
"""

from __future__ import annotations

from collections.abc import Iterable

from confluent_kafka import TopicPartition

from streams.coordinates import TP
from streams.logs import Logger
from streams.pipeline.errors import BrokerUnavailable, state_outages
from streams.pipeline.offsets import PartitionOffsets
from streams.pipeline.produce import OutputSink
from streams.state import StateManager


def settle_outputs(sink: OutputSink, timeout: float, log: Logger) -> bool:
    """Wait until every write is acknowledged or failed (or ``timeout``): a commit covers
    only acknowledged writes. False (and an ERROR line) when some are still outstanding:
    nothing may commit then. Failed writes are in ``sink.errors``."""
    sink.poll()
    left = sink.flush(timeout)
    if left:
        log.error("outputs not acknowledged in time", outstanding=left)
    return not left


def settle_changelog(sink: OutputSink, state: StateManager, timeout: float) -> None:
    """Wait for the store changes a flush just wrote (``timeout`` at most): every one
    acknowledged, or ``BrokerUnavailable`` when some are still outstanding (the broker is
    away: recovery undoes the interval, as for one whose delivery timed out while a node
    was lost), ``ChangelogWriteError`` when the broker refused one."""
    if sink.flush(timeout):
        raise BrokerUnavailable(f"store changes not acknowledged within {timeout:g} s")
    with state_outages():
        state.check_delivered()


def apply_committed(sink: OutputSink, state: StateManager) -> None:
    """Hand the committed store changes to the local stores (written a chunk per poll:
    ``send_ahead``). librdkafka counts the events waiting to be served (a lost broker's
    error, on a cluster with a node down) among the writes ``check_delivered`` asks about:
    they are served first, or a write acknowledged long ago looks outstanding."""
    sink.producer.poll(0)
    state.apply(deferred=True)


def finished_positions(
    partitions: Iterable[PartitionOffsets], state: StateManager | None
) -> dict[TP, int]:
    """The position to commit of each partition (call it once the writes are settled).

    Past its last finished record (``PartitionOffsets.finished``); or, for a partition
    with store changes but no new record (a record of a retry tier changed its waiting
    room), its committed offset, so the changes are flushed with this commit. (A record
    that failed never finished: its partition's position stays before it, and its attempt
    left no store change.)
    """
    changed = state.changed() if state is not None else set()
    positions: dict[TP, int] = {}
    for po in partitions:
        position = po.finished()
        if position is None and (po.topic, po.partition) in changed:
            position = po.committed
        if position is not None:
            positions[(po.topic, po.partition)] = position
    return positions


def moved_offsets(
    partitions: Iterable[PartitionOffsets], positions: dict[TP, int]
) -> list[TopicPartition]:
    """The positions that differ from the committed offsets (or finished ahead of them
    otherwise than the last commit said), as ``TopicPartition``s to commit."""
    return [
        po.commit_offset(positions[key])
        for po in partitions
        if (key := (po.topic, po.partition)) in positions
        and (po.committed != positions[key] or po.ahead != po.committed_ahead)
    ]


def mark_committed(partitions: Iterable[PartitionOffsets], offsets: list[TopicPartition]) -> None:
    committed = {(tp.topic, tp.partition): tp.offset for tp in offsets}
    for po in partitions:
        offset = committed.get((po.topic, po.partition))
        if offset is not None:
            po.committed_now(offset)
