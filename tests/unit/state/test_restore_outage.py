"""A restore that meets a broker outage: the client's errors do not stop it, and one that
cannot go on says so as an outage (``transient``), for the runtime to restore again once
the broker answers, rather than stop the instance.

Seen in CI on a three-node cluster with a node killed: a restore's consumer reports the
lost node's connection among its records, then fetches from the new leader. A broker
cannot be made to do that on demand; consumers that do stand in for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Message

from streams.state import MemoryBackend, RestoreError
from streams.state.restore import restore_partition
from streams.testing.memory import MemoryCluster, MemoryConsumer

TOPIC = "app-s-changelog"


class NodeLost(MemoryConsumer):
    """Hands over a lost connection's errors first (as librdkafka puts them among a
    consumer's records: a message with an error and no record), then the records."""

    def __init__(self, cluster: MemoryCluster, *errors: int) -> None:
        super().__init__(cluster, {"group.id": "restore"})
        self.errors = list(errors)

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        if self.errors:
            return [Message(error=KafkaError(self.errors.pop(0)))]
        return super().consume(num_messages, timeout)


class Silent(MemoryConsumer):
    """A broker that stopped answering: nothing is fetched any more."""

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        return []


def changelog(records: int) -> MemoryCluster:
    cluster = MemoryCluster()
    cluster.create_topic(TOPIC, 1)
    producer = cluster.producer({})
    for i in range(records):
        producer.produce(TOPIC, key=f"k{i}".encode(), value=b"v", partition=0)
    return cluster


def restore(consumer: MemoryConsumer, records: int, stall: float = 5.0) -> Any:
    storage = MemoryBackend().open(Path("unused"))
    restore_partition(
        consumer,  # type: ignore[arg-type]
        storage,
        topic=TOPIC,
        partition=0,
        start_offset=0,
        end_offset=records,
        committed_offset=None,
        stall_timeout=stall,
    )
    return storage


def test_a_node_lost_during_a_restore_does_not_stop_it() -> None:
    cluster = changelog(3)
    lost = NodeLost(cluster, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN)
    storage = restore(lost, 3)
    assert sorted(k for k, _ in storage.items()) == [b"k0", b"k1", b"k2"]


def test_a_restore_that_makes_no_progress_fails_as_an_outage() -> None:
    cluster = changelog(3)
    with pytest.raises(RestoreError, match=r"app-s-changelog\[0\] made no progress") as raised:
        restore(Silent(cluster, {"group.id": "restore"}), 3, stall=0.3)
    assert raised.value.transient  # the runtime waits for the broker and restores again


def test_an_error_of_the_changelog_itself_stops_the_restore() -> None:
    cluster = changelog(3)
    consumer = NodeLost(cluster, KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(RestoreError, match="failed") as raised:
        restore(consumer, 3)
    assert not raised.value.transient
