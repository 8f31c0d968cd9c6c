"""An in-memory Kafka for the TestDriver: clients with confluent-kafka's surface, no broker.

The driver runs the runtime's own code with these clients instead of confluent-kafka's::

    cluster = MemoryCluster(partitions=3)
    producer = cluster.producer({"transactional.id": "app-0"})
    consumer = cluster.consumer({"group.id": "app", "enable.partition.eof": True})

What it simulates, deterministically and without threads:

- Topics of partitions, each an append-only log with Kafka's offsets (from 0, one per
  record, and one per transaction marker). Topics are created explicitly or on first use.
- ``MemoryProducer``: ``produce`` writes at once; delivery reports (real
  ``confluent_kafka.Message`` objects, with offsets) are served only inside ``poll`` and
  ``flush`` (failures only with ``delivery.report.only.error``, as librdkafka); partitioning
  by murmur2 of the key, as the Java client and the runtime's producer. Transactions with
  librdkafka's lifecycle: open records are invisible to read_committed consumers, commit
  shows them and commits the offsets sent to the transaction, abort hides them for good;
  a second ``init_transactions`` with the same ``transactional.id`` fences the first.
- ``MemoryConsumer``: subscription with rebalance callbacks (one member per group,
  cooperative: callbacks get the partitions that change, inside ``consume``/``poll``),
  explicit assignment, pause/resume/seek, group offsets and ``auto.offset.reset``,
  read_committed and read_uncommitted, end-of-partition events. Records come out in the
  order they reached the cluster, across partitions.
- Faults on demand: failed deliveries and failed transaction commits.

What it does not: replication, retention or compaction (every record stays), consumer-group
rebalancing between members, session timeouts (``on_lost``), transaction timeouts, quotas,
a full local queue (``BufferError``), or blocking: every timeout is accepted and ignored,
and a call that would wait for the broker answers at once with what the cluster holds.
Records handed out are ``confluent_kafka.Message``/``TopicPartition`` objects; errors are
``KafkaException(KafkaError(...))`` with librdkafka's codes.
"""

from streams.testing.memory.cluster import MemoryCluster
from streams.testing.memory.consumer import MemoryConsumer
from streams.testing.memory.producer import MemoryProducer
from streams.testing.memory.records import GroupMetadata, StoredRecord, TxState

__all__ = [
    "GroupMetadata",
    "MemoryCluster",
    "MemoryConsumer",
    "MemoryProducer",
    "StoredRecord",
    "TxState",
]
