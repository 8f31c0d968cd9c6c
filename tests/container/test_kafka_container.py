"""Kafka in Docker through ``KafkaContainer``: the image ``make image`` builds (on CI), or
``apache/kafka`` where Docker Hub is reachable. These tests need Docker; on CI they fail
rather than skip without it."""

from __future__ import annotations

from collections.abc import Callable

import docker  # type: ignore[import-untyped]
import factories
import pytest
from confluent_kafka import Consumer, Producer
from testcontainers.core.network import Network

from streams.broker import KAFKA_VERSION
from streams.cluster import admin_client, create_topic
from streams.envelope import Envelope
from streams.testing import (
    ContainerError,
    KafkaContainer,
    KafkaIO,
    TopicFactory,
    TopologyProcess,
    unique_topic_name,
    wait_for_records,
)
from streams.testing.container import LABEL

# Clients here may outlive the containers they talked to (librdkafka handles are freed
# late); without this, each would log every failed reconnect after the container is gone.
QUIET = {"log_level": 0}


def order(n: int) -> Envelope:
    return factories.order(f"o{n}", f"c{n % 4}", key=f"o{n}", total_cents=n, version=1)


@pytest.fixture
def container_topics(kafka_container: KafkaContainer) -> TopicFactory:
    return TopicFactory(admin_client(kafka_container.bootstrap_servers, **QUIET), hint="c")


def test_the_container_runs_the_expected_kafka(kafka_container: KafkaContainer) -> None:
    # The broker answers through the mapped port, with the jars' own version string.
    result = kafka_container.exec(
        ["sh", "-c", "ls /opt/kafka/libs | grep -c '^kafka_2.13-.*\\.jar$'"]
    )
    assert result.exit_code == 0
    assert int(result.output) == 1
    if kafka_container.image.startswith("streams-kafka:"):
        assert kafka_container.image == f"streams-kafka:{KAFKA_VERSION}"
    meta = admin_client(kafka_container.bootstrap_servers, **QUIET).list_topics(timeout=10)
    assert [f"{b.host}:{b.port}" for b in meta.brokers.values()] == [
        kafka_container.bootstrap_servers
    ]


def test_envelopes_round_trip_through_the_container(
    kafka_container: KafkaContainer, container_topics: TopicFactory, envelope_codec: object
) -> None:
    topic = container_topics("orders", partitions=3)
    io = KafkaIO(kafka_container.bootstrap_servers, codec=envelope_codec)
    try:
        sent = io.produce(topic, [order(i) for i in range(30)])
        got = io.wait_for_envelopes(topic, 30, timeout=60)
    finally:
        container_topics.cleanup()
    assert sorted(got, key=lambda e: e.id) == sorted(sent, key=lambda e: e.id)


def test_replay_a_topic_from_one_cluster_into_another(
    kafka_container: KafkaContainer, make_kafka_container: object
) -> None:
    """Two clusters in one test: copy a topic, keys, headers and per-partition order intact."""
    source = kafka_container
    target: KafkaContainer = make_kafka_container()  # type: ignore[operator]
    assert target.bootstrap_servers != source.bootstrap_servers
    topic = unique_topic_name("replay")
    for cluster in (source, target):
        create_topic(admin_client(cluster.bootstrap_servers, **QUIET), topic, partitions=2)
    producer = Producer({"bootstrap.servers": source.bootstrap_servers, "acks": "all", **QUIET})
    for i in range(100):
        producer.produce(topic, str(i).encode(), f"k{i % 7}", headers=[("seq", str(i).encode())])
    assert producer.flush(30) == 0

    copied = _copy(source.bootstrap_servers, target.bootstrap_servers, topic, 100)

    original = wait_for_records(source.bootstrap_servers, topic, 100, timeout=60)
    replayed = wait_for_records(target.bootstrap_servers, topic, 100, timeout=60)
    assert copied == 100

    def view(records: list) -> list[tuple[int, int, bytes, bytes, list]]:  # type: ignore[type-arg]
        rows = [(m.partition(), m.offset(), m.key(), m.value(), m.headers()) for m in records]
        return sorted(rows)

    assert view(replayed) == view(original)


def _copy(src: str, dst: str, topic: str, count: int) -> int:
    """A plain consume→produce copy that keeps partitions, keys, values and headers."""
    consumer = Consumer(
        {
            "bootstrap.servers": src,
            "group.id": f"copy-{topic}",
            "auto.offset.reset": "earliest",
            **QUIET,
        }
    )
    producer = Producer({"bootstrap.servers": dst, "enable.idempotence": True, **QUIET})
    consumer.subscribe([topic])
    copied = 0
    try:
        for _ in range(600):  # at most about a minute; the assertion below tells the rest
            for msg in consumer.consume(500, timeout=0.1):
                assert msg.error() is None, msg.error()
                producer.produce(
                    topic, msg.value(), msg.key(), partition=msg.partition(), headers=msg.headers()
                )
                copied += 1
            if copied >= count:
                break
    finally:
        consumer.close()
    assert producer.flush(30) == 0
    return copied


def test_containers_reach_each_other_by_network_alias(
    make_kafka_container: object, docker_network: Network
) -> None:
    kafka: KafkaContainer = make_kafka_container(  # type: ignore[operator]
        network=docker_network, alias="kafka-other"
    )
    assert kafka.internal_bootstrap == "kafka-other:19092"
    # Kafka's own admin tool, in a throwaway container on the same network; run() raises
    # ContainerError (with the tool's output) unless it exits 0.
    output = docker.from_env().containers.run(
        kafka.image,
        entrypoint=["java", "-cp", "/opt/kafka/libs/*", "org.apache.kafka.tools.ClusterTool"],
        command=["cluster-id", "--bootstrap-server", kafka.internal_bootstrap],
        network=docker_network.name,
        labels={LABEL: "tool"},
        remove=True,
    )
    assert b"Cluster ID:" in output


def test_stop_removes_the_container(make_kafka_container: object) -> None:
    kafka: KafkaContainer = make_kafka_container()  # type: ignore[operator]
    container_id = kafka.get_container_id()

    kafka.stop()
    kafka.stop()  # a second stop is harmless (the fixture stops it once more after the test)

    with pytest.raises(docker.errors.NotFound):
        docker.from_env().containers.get(container_id)


def test_a_topology_runs_against_the_container(
    kafka_container: KafkaContainer,
    container_topics: TopicFactory,
    run_topology: Callable[..., TopologyProcess],
    envelope_codec: object,
) -> None:
    source = container_topics("orders", partitions=2)
    app = unique_topic_name("mirror")
    io = KafkaIO(kafka_container.bootstrap_servers, codec=envelope_codec)
    try:
        run_topology(
            "topology/mirror.py",
            app_id=app,
            bootstrap=kafka_container.bootstrap_servers,
            input=source,
        )
        sent = io.produce(source, [order_v2(i) for i in range(20)])
        got = io.wait_for_envelopes(f"{app}-mirror", 20, timeout=60)
    finally:
        container_topics.cleanup()
    for key in {e.key for e in sent}:
        assert [e.id for e in got if e.key == key] == [e.id for e in sent if e.key == key]


def order_v2(n: int) -> Envelope:
    line = {"sku": "s", "quantity": 1, "unit_price_cents": 100}
    data = {
        "order_id": f"o{n}",
        "customer_id": f"c{n % 4}",
        "items": [line],
        "total_cents": 100,
        "currency": "EUR",
    }
    return Envelope.new("order.placed", data, version=2, key=f"c{n % 4}")


def test_a_missing_image_fails_with_what_to_do(kafka_container: KafkaContainer) -> None:
    # (kafka_container: only for its Docker check; the session container is not touched)
    with pytest.raises(ContainerError, match="make image") as info:
        KafkaContainer("streams-test/no-such-kafka:0").start()
    assert "no-such-kafka" in str(info.value)
    leftovers = docker.from_env().containers.list(
        all=True, filters={"ancestor": "streams-test/no-such-kafka:0"}
    )
    assert leftovers == []
