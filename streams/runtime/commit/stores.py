"""The stores' side of the committers that have them: every changelog created before the
first commit, and the stores of a partition restored when it is assigned, and again after
an outage when the outage interrupted that restore.

A restore the broker does not answer (a node lost while a changelog's leader moves)
raises ``BrokerUnavailable``, as any other work an outage interrupts: the partition stays
assigned with its stores closed, the runtime waits for the broker, and ``undo`` restores
them before any of their records is read again (``reopen``).
"""

from __future__ import annotations

from collections.abc import Sequence

from streams.cluster import TopicNotFoundError, Topics
from streams.coordinates import TP
from streams.pipeline.errors import state_outages
from streams.pipeline.offsets import Partitions
from streams.runtime.errors import MissingTopicError
from streams.state import StateManager


def ensure_changelogs(cluster: Topics, state: StateManager) -> None:
    """Create or validate the changelog of every store, partitioned like its source."""
    sources = {store.source_topic or "" for store in state.stores.values()}
    try:
        partitions = {t: cluster.partition_count(t) for t in sources}
    except TopicNotFoundError as exc:
        raise MissingTopicError(f"{exc}: a state store is partitioned like it") from exc
    state.ensure_changelogs(cluster, partitions)


def restore(partitions: Partitions, state: StateManager, keys: Sequence[TP]) -> None:
    """Read the committed offsets of newly assigned partitions, then restore their stores
    up to them (blocks for the restores). Raises ``BrokerUnavailable`` when the broker
    does not answer; the partitions whose stores were not restored stay closed."""
    fed = {store.source_topic for store in state.stores.values()}
    with state_outages():
        for (topic, partition), offset in partitions.load_committed(keys).items():
            if topic in fed:
                state.assign(topic, partition, offset)


def reopen(partitions: Partitions, state: StateManager, keys: Sequence[TP]) -> None:
    """Restore the stores of those of ``keys`` (assigned partitions) whose restore an
    outage interrupted; none at all, and no request, in the usual case."""
    closed = state.closed(keys)
    if closed:
        restore(partitions, state, closed)
