"""The native runtime on a real broker: the same outputs as the TestDriver, and a failing
record never committed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from confluent_kafka import Consumer, Message, TopicPartition
from confluent_kafka.admin import AdminClient
from factories import order
from runtime_thread import RuntimeThread
from structlog.testing import capture_logs

from streams.cluster import Topics
from streams.codec import AvroCodec
from streams.codec.envelope_wire import envelope_value, type_version_bytes
from streams.dlq import read_dlq
from streams.envelope import Envelope
from streams.runtime import MissingTopicError, Runtime, RuntimeConfig
from streams.runtime.topics import prepare_topics
from streams.schemas import default_catalog
from streams.testing import TestDriver, TopicFactory, TopicReader, produce_envelopes
from streams.testing.produce import Record, produce_records
from streams.testing.topics import unique_topic_name
from streams.topology import Topology, TopologyBuilder, load_topology, owned
from streams.topology.loader import import_file
from streams.topology.policy import ProcessingError

ORDERS = Path(__file__).resolve().parents[2] / "topology" / "orders.py"
CODEC = AvroCodec(default_catalog())


def decode(msg: Message) -> Envelope:
    return CODEC.decode(msg.value(), cast(Any, msg.headers()))


class Running(RuntimeThread):
    """An instance of ``topology`` in this process."""

    def __init__(self, topology: Topology, bootstrap: str) -> None:
        super().__init__(Runtime(topology, RuntimeConfig(bootstrap=bootstrap, batch_size=100)))

    def stop(self, timeout: float = 30) -> BaseException | None:
        return super().stop(timeout)


@pytest.fixture
def running(kafka_bootstrap: str) -> Iterator[list[Running]]:
    started: list[Running] = []
    yield started
    for r in started:
        r.stop()


def by_key(envs: list[tuple[int, Envelope]]) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    for partition, e in envs:
        row = (partition, e.type, e.version, dict(e.data), e.causation_id, e.correlation_id)
        out.setdefault(e.key or "", []).append(row)
    return out


def test_the_orders_topology_writes_what_the_test_driver_predicts(
    kafka_bootstrap: str,
    kafka_admin: AdminClient,
    make_topic: TopicFactory,
    running: list[Running],
) -> None:
    source = make_topic("orders-in", partitions=4)
    topology = load_topology(ORDERS, app_id=unique_topic_name("parity"), params={"input": source})
    orders = list(import_file(ORDERS).sample_orders(300))
    accepted, rejected = topology.topics_written
    with TestDriver(topology, partitions=4) as driver:
        driver.pipe(source, orders)
        expected = {
            t: [(r.partition, r.envelope) for r in driver.records(t)] for t in (accepted, rejected)
        }
    assert expected[accepted] and expected[rejected]

    produce_envelopes(kafka_bootstrap, source, orders, CODEC)
    prepare_topics(Topics(kafka_admin), topology)
    running.append(Running(topology, kafka_bootstrap))
    for topic, want in expected.items():
        with TopicReader(kafka_bootstrap, topic) as reader:
            count = len(want)
            records = reader.wait_for(lambda rs: len(rs) >= count, 60)  # noqa: B023
        got = [(m.partition() or 0, decode(m)) for m in records]
        assert by_key(got) == by_key(want), topic
    assert running[0].stop() is None


def poison_topology(app_id: str, source: str) -> Topology:
    def check(env: Envelope) -> Envelope:
        if env.data["order_id"] == "poison":
            raise ValueError("cannot process this order")
        return env

    b = TopologyBuilder(app_id)
    b.source(source, type="order.placed", version=2).map(check).to(
        owned("out"), type="order.placed", version=2
    )
    return b.build()


def test_a_failing_record_stops_the_runtime_and_is_never_committed(
    kafka_bootstrap: str, kafka_admin: AdminClient, make_topic: TopicFactory
) -> None:
    source = make_topic("poison-in", partitions=1)
    topology = poison_topology(unique_topic_name("poison"), source)
    names = [f"o-{i}" for i in range(5)] + ["poison"] + [f"o-{i}" for i in range(6, 10)]
    produce_envelopes(kafka_bootstrap, source, [order(n) for n in names], CODEC)
    prepare_topics(Topics(kafka_admin), topology)

    with capture_logs() as logs:
        run = Running(topology, kafka_bootstrap)
        run.thread.join(120)
    assert isinstance(run.error, ProcessingError)
    assert f"step 'check' failed on {source}[0]@5: ValueError" in str(run.error)
    (failed,) = [e for e in logs if e["event"] == "record failed"]
    assert failed["log_level"] == "error"
    assert (failed["app"], failed["topic"], failed["partition"], failed["offset"]) == (
        topology.app_id,
        source,
        0,
        5,
    )
    assert not [e for e in logs if e["log_level"] == "info" and "offset" in e]  # none per record

    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": topology.app_id})
    try:
        (tp,) = consumer.committed([TopicPartition(source, 0)], timeout=10)
    finally:
        consumer.close()
    assert tp.offset == 5  # the records before the poison, and not one more
    with TopicReader(kafka_bootstrap, topology.topics_written[0]) as reader:
        out: list[Message] = reader.wait_for(lambda rs: len(rs) >= 5, 30)
    assert [decode(m).data["order_id"] for m in out] == names[:5]


def test_poison_records_go_to_the_dlq_by_default_and_the_instance_runs_on(
    kafka_bootstrap: str, kafka_admin: AdminClient, make_topic: TopicFactory, running: list[Running]
) -> None:
    source = make_topic("garbage-in", partitions=1)
    topology = poison_topology(unique_topic_name("garbage"), source)  # no retry policy
    good = [order(f"o-{i}") for i in range(6)]
    unknown = envelope_value(good[0], b"", type_version_bytes("no.such.type", 1))
    v99 = envelope_value(good[0], b"\x02x", type_version_bytes("order.placed", 99))
    poison: list[tuple[bytes, bytes | None]] = [
        (b"c", b"\x00\x01garbage"),
        (b"c", unknown),
        (b"c", v99),
    ]
    records: list[Record] = []
    for i, env in enumerate(good):
        value, headers = CODEC.encode(env)
        records.append((b"c", value, headers))
        if i < len(poison):
            records.append((*poison[i], None))
    produce_records(kafka_bootstrap, source, records, partition=0)
    prepare_topics(Topics(kafka_admin), topology)
    running.append(Running(topology, kafka_bootstrap))

    with TopicReader(kafka_bootstrap, topology.topics_written[0]) as reader:
        out: list[Message] = reader.wait_for(lambda rs: len(rs) >= len(good), 60)
    assert [decode(m).data["order_id"] for m in out] == [f"o-{i}" for i in range(6)]
    dlq = f"{topology.app_id}-{source}-dlq"
    letters = read_dlq(kafka_bootstrap, dlq).letters
    assert [(d.value, d.failure and d.failure.origin.offset) for d in letters] == [
        (b"\x00\x01garbage", 1),
        (unknown, 3),
        (v99, 5),
    ]
    assert all(d.failure and d.failure.stage.value == "decode" for d in letters)
    assert running[0].thread.is_alive() and running[0].error is None
    assert running[0].stop() is None


def test_a_missing_source_topic_is_a_clear_error(kafka_admin: AdminClient) -> None:
    topology = poison_topology("app", unique_topic_name("nowhere"))
    with pytest.raises(MissingTopicError, match=r"reads topic 'nowhere-\w+', which does not exist"):
        prepare_topics(Topics(kafka_admin), topology)
