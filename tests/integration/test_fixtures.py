"""The test kit's helpers against a real broker: produce, then wait for what arrives."""

from __future__ import annotations

import factories
import pytest
from confluent_kafka.admin import AdminClient

from streams.cluster import create_topic
from streams.envelope import Envelope
from streams.testing import (
    KafkaIO,
    TopicFactory,
    TopicReader,
    WaitTimeoutError,
    produce_records,
    unique_topic_name,
    wait_for,
    wait_for_records,
)


def order(n: int) -> Envelope:
    return factories.order(f"o{n}", f"c{n % 3}", key=f"o{n}", total_cents=n, version=1)


def test_wait_for_records_returns_what_was_written_in_offset_order(
    kafka_bootstrap: str, make_topic: TopicFactory
) -> None:
    topic = make_topic("rec")
    records = [(f"k{i}", f"v{i}".encode(), [("n", str(i).encode())]) for i in range(20)]
    assert produce_records(kafka_bootstrap, topic, records) == 20

    got = wait_for_records(kafka_bootstrap, topic, 20, timeout=30)

    assert [m.value() for m in got] == [f"v{i}".encode() for i in range(20)]
    assert [m.offset() for m in got] == list(range(20))
    assert got[3].key() == b"k3"
    assert got[3].headers() == [("n", b"3")]


def test_wait_for_records_across_partitions_with_a_filter(
    kafka_bootstrap: str, make_topic: TopicFactory
) -> None:
    topic = make_topic("rec", partitions=3)
    produce_records(kafka_bootstrap, topic, [(f"k{i}", str(i).encode(), None) for i in range(30)])

    even = wait_for_records(
        kafka_bootstrap, topic, 15, timeout=30, match=lambda m: int(m.value()) % 2 == 0
    )

    assert sorted(int(m.value()) for m in even) == list(range(0, 30, 2))
    assert {m.partition() for m in even} <= {0, 1, 2}


def test_a_timeout_says_what_was_seen(kafka_bootstrap: str, make_topic: TopicFactory) -> None:
    topic = make_topic("short")
    produce_records(kafka_bootstrap, topic, [(b"k", b"only-one", None)])

    with pytest.raises(WaitTimeoutError) as info:
        wait_for_records(kafka_bootstrap, topic, 2, timeout=2)

    message = str(info.value)
    assert f"2 records in topic {topic!r} did not arrive within 2 s" in message
    assert "seen 1 records" in message
    assert "0@0 key=b'k' value=b'only-one'" in message


def test_a_missing_topic_is_waited_for_and_reported(kafka_bootstrap: str) -> None:
    with pytest.raises(WaitTimeoutError, match="the topic does not exist"):
        wait_for_records(kafka_bootstrap, unique_topic_name("absent"), 1, timeout=1)


def test_reader_picks_up_a_topic_created_after_it_started(
    kafka_bootstrap: str, kafka_admin: AdminClient, make_topic: TopicFactory
) -> None:
    topic = unique_topic_name("late")
    with TopicReader(kafka_bootstrap, topic) as reader:
        assert reader.poll(0.1) == []
        create_topic(kafka_admin, topic)
        make_topic.created.append(topic)  # deleted after the test like the others
        produce_records(kafka_bootstrap, topic, [(None, b"late", None)])
        got = reader.wait_for(lambda rs: len(rs) == 1, timeout=30)
    assert got[0].value() == b"late"


def test_wait_for_a_predicate_over_all_records(
    kafka_bootstrap: str, make_topic: TopicFactory
) -> None:
    topic = make_topic("pred")
    produce_records(kafka_bootstrap, topic, [(b"a", b"1", None), (b"a", b"2", None)])

    got = wait_for(
        kafka_bootstrap, topic, lambda rs: sum(int(m.value()) for m in rs) == 3, timeout=30
    )

    assert len(got) == 2


def test_kafka_io_round_trips_envelopes(kafka_io: KafkaIO, make_topic: TopicFactory) -> None:
    topic = make_topic("env", partitions=2)
    sent = kafka_io.produce(topic, [order(i) for i in range(10)])

    got = kafka_io.wait_for_envelopes(topic, 10, timeout=30)

    assert sorted(got, key=lambda e: e.id) == sorted(sent, key=lambda e: e.id)


def test_kafka_io_waits_for_matching_envelopes(kafka_io: KafkaIO, make_topic: TopicFactory) -> None:
    topic = make_topic("env")
    kafka_io.produce(topic, [order(i) for i in range(6)])

    got = kafka_io.wait_for_envelopes(
        topic, 2, timeout=30, match=lambda e: e.data["customer_id"] == "c1"
    )

    assert [e.data["order_id"] for e in got] == ["o1", "o4"]
