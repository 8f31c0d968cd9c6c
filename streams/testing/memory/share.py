"""``MemoryShareConsumer``: ``confluent_kafka.ShareConsumer``'s surface on a ``MemoryCluster``.

One share group with one member, this consumer, in explicit acknowledgement mode (as the
runtime's share workers run). ``poll`` delivers every record of the subscribed topics that
is available, oldest first, each with its delivery count (1 the first time); a delivered
record is acquired until it is acknowledged: ``ACCEPT`` (or ``REJECT``) settles it, ``RELEASE``
makes it available again, delivered at a later ``poll`` with its count one higher. As with
the broker, a record delivered ``delivery_limit`` times is archived when released (5, the
broker's ``group.share.delivery.count.limit`` default). Acknowledgements take effect at
once; ``commit_async`` has nothing left to send. Read committed: records of aborted
transactions are never delivered, a partition stops at an open one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from confluent_kafka import AcknowledgeType, Message

from streams.coordinates import TP
from streams.testing.memory.records import TxState, to_message

if TYPE_CHECKING:
    from streams.testing.memory.cluster import MemoryCluster

DELIVERY_LIMIT = 5


class MemoryShareConsumer:
    """A share group's consumer on ``cluster`` (see the module docstring)."""

    def __init__(self, cluster: MemoryCluster, config: Mapping[str, Any]) -> None:
        self._cluster = cluster
        self._topics: list[str] = []
        self._next: dict[TP, int] = {}  # the first offset never delivered, per partition
        self._deliveries: dict[tuple[str, int, int], int] = {}
        self._available: list[tuple[str, int, int]] = []  # released, to deliver again
        self._acquired: set[tuple[str, int, int]] = set()
        self.delivery_limit = DELIVERY_LIMIT
        self._closed = False

    def subscribe(self, topics: list[str]) -> None:
        self._topics = list(topics)

    def poll(self, timeout: float = -1) -> list[Message]:
        """What is available now, never waiting (the cluster is in this process)."""
        if self._closed:
            raise RuntimeError("the share consumer is closed")
        found = [self._deliver(at) for at in sorted(self._available, key=self._sequence)]
        self._available.clear()
        for topic in self._topics:
            for partition in range(self._cluster.partition_count(topic)):
                log = self._cluster._log(topic, partition)
                offset = self._next.get((topic, partition), 0)
                while offset < len(log):
                    record = log[offset]
                    if record.state is TxState.OPEN:
                        break  # the last stable offset
                    if not record.control and record.state is not TxState.ABORTED:
                        found.append(self._deliver((topic, partition, offset)))
                    offset += 1
                self._next[(topic, partition)] = offset
        return found

    def _sequence(self, at: tuple[str, int, int]) -> int:
        topic, partition, offset = at
        return self._cluster._log(topic, partition)[offset].sequence

    def _deliver(self, at: tuple[str, int, int]) -> Message:
        topic, partition, offset = at
        count = self._deliveries[at] = self._deliveries.get(at, 0) + 1
        self._acquired.add(at)
        message = to_message(self._cluster._log(topic, partition)[offset])
        return Message(
            topic=topic,
            partition=partition,
            offset=offset,
            key=message.key(),
            value=message.value(),
            headers=message.headers(),
            timestamp=message.timestamp(),
            delivery_count=count,
        )

    def acknowledge_offset(
        self, topic: str, partition: int, offset: int, ack_type: Any = AcknowledgeType.ACCEPT
    ) -> None:
        at = (topic, partition, offset)
        if at not in self._acquired:
            raise RuntimeError(f"{topic}[{partition}]@{offset} is not in flight")
        self._acquired.discard(at)
        if ack_type == AcknowledgeType.RELEASE and self._deliveries[at] < self.delivery_limit:
            self._available.append(at)

    def commit_async(self) -> None:
        """Acknowledgements took effect when given."""

    def close(self) -> None:
        self._closed = True
