"""A local three-node cluster keeps acknowledged writes through a crashed node and a
frozen one, and takes the node back in sync afterwards (the session's ``kafka_cluster``)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient, ConfigResource

from streams.broker import LocalCluster, NodeState
from streams.broker.readiness import broker_ids
from streams.cluster import create_topic
from streams.errors import BrokerError
from streams.testing import unique_topic_name

pytestmark = pytest.mark.cluster


@pytest.fixture
def admin(kafka_cluster: LocalCluster) -> AdminClient:
    # Quiet: nodes go down on purpose here, and librdkafka would print every refusal.
    return AdminClient({"bootstrap.servers": kafka_cluster.bootstrap, "log_level": 0})


@pytest.fixture
def topic(admin: AdminClient, request: pytest.FixtureRequest) -> Iterator[str]:
    """Three partitions, replication factor and min ISR left to the cluster."""
    name = unique_topic_name(request.node.name)
    create_topic(admin, name, partitions=3, replication_factor=-1)
    yield name
    admin.delete_topics([name])[name].result(30)


def produce(cluster: LocalCluster, topic: str, values: range) -> None:
    """Write ``values`` with acks=all and idempotence; every one must be acknowledged."""
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            # A request to a frozen leader is given up after 5 s and retried (same
            # sequence numbers: no duplicates) on the leader that replaced it.
            "request.timeout.ms": 5000,
            "message.timeout.ms": 120_000,
            "log_level": 0,
        }
    )
    failed: list[KafkaError] = []

    def delivered(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            failed.append(err)

    for value in values:
        producer.produce(topic, key=str(value % 11), value=str(value), on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(150) == 0, "unacknowledged writes left"
    assert failed == []


def consume_all(cluster: LocalCluster, topic: str, count: int) -> list[int]:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"reader-{topic}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    consumer.subscribe([topic])
    seen: list[int] = []
    deadline = time.monotonic() + 120
    try:
        while len(seen) < count and time.monotonic() < deadline:
            for msg in consumer.consume(500, timeout=1.0):
                if msg.error() is None:
                    seen.append(int(msg.value()))
    finally:
        consumer.close()
    return seen


def leader(admin: AdminClient, topic: str, partition: int) -> int:
    return int(admin.list_topics(topic, timeout=10).topics[topic].partitions[partition].leader)


def wait_for_leader_other_than(cluster: LocalCluster, topic: str, node_id: int) -> None:
    # Asked of the other nodes: a metadata request to the frozen one would hang.
    others = ",".join(cluster.node_bootstrap(n) for n in cluster.node_ids if n != node_id)
    admin = AdminClient({"bootstrap.servers": others, "log_level": 0})
    deadline = time.monotonic() + 60
    while leader(admin, topic, 0) in (node_id, -1):
        assert time.monotonic() < deadline, f"partition 0 still led by node {node_id}"
        time.sleep(0.2)


def topic_config(admin: AdminClient, topic: str) -> dict[str, str]:
    # Asked of any node, which may learn of the topic a moment after the one that said
    # it exists.
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    deadline = time.monotonic() + 30
    while True:
        try:
            config = admin.describe_configs([resource])[resource].result(30)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise
            assert time.monotonic() < deadline, f"no node knows {topic}"
            time.sleep(0.1)
            continue
        return {name: entry.value for name, entry in config.items()}


def states(cluster: LocalCluster) -> list[NodeState]:
    return [node.state for node in cluster.status().nodes]


def test_three_nodes_and_the_cluster_replication_defaults(
    kafka_cluster: LocalCluster, admin: AdminClient, topic: str
) -> None:
    assert states(kafka_cluster) == [NodeState.RUNNING] * 3
    assert broker_ids(kafka_cluster.bootstrap) == {1, 2, 3}
    partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
    assert [sorted(p.replicas) for p in partitions.values()] == [[1, 2, 3]] * 3
    assert topic_config(admin, topic)["min.insync.replicas"] == "2"


def test_acks_all_writes_survive_a_killed_node_and_it_catches_up(
    kafka_cluster: LocalCluster, topic: str
) -> None:
    produce(kafka_cluster, topic, range(0, 200))
    victim = 2
    assert kafka_cluster.kill(victim)
    assert states(kafka_cluster) == [NodeState.RUNNING, NodeState.DOWN, NodeState.RUNNING]

    produce(kafka_cluster, topic, range(200, 400))
    seen = consume_all(kafka_cluster, topic, 400)
    assert sorted(seen) == list(range(400)), "every acknowledged write is read, once"
    # Those writes were acknowledged by two replicas: the dead one has left the ISR.
    with pytest.raises(BrokerError, match=r"isr \[1, 3\] of replicas \[1, 2, 3\]"):
        kafka_cluster.wait_in_sync([topic], timeout=1)

    assert kafka_cluster.start(victim)
    kafka_cluster.wait_in_sync([topic], timeout=120)
    assert states(kafka_cluster) == [NodeState.RUNNING] * 3


def test_writes_go_on_while_a_leader_is_frozen(
    kafka_cluster: LocalCluster, admin: AdminClient, topic: str
) -> None:
    frozen = leader(admin, topic, 0)
    assert kafka_cluster.pause(frozen)
    assert kafka_cluster.status().nodes[frozen - 1].state is NodeState.PAUSED

    # The controller fences the silent node (broker.session.timeout.ms) and moves its
    # leaderships; the producer's requests to it time out and go to the new leader.
    produce(kafka_cluster, topic, range(300))
    wait_for_leader_other_than(kafka_cluster, topic, frozen)
    assert sorted(consume_all(kafka_cluster, topic, 300)) == list(range(300))

    assert kafka_cluster.resume(frozen)
    kafka_cluster.wait_in_sync([topic], timeout=120)
    assert states(kafka_cluster) == [NodeState.RUNNING] * 3


def test_a_restarted_node_is_back_in_the_metadata(kafka_cluster: LocalCluster) -> None:
    old = kafka_cluster.status().nodes[0].pid
    kafka_cluster.restart(1)
    new = kafka_cluster.status().nodes[0]
    assert new.state is NodeState.RUNNING and new.pid != old
    assert broker_ids(kafka_cluster.node_bootstrap(1)) == {1, 2, 3}
