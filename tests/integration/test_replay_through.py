"""``replay --through``: a range reprocessed by a topology under a new app id writes
exactly that range's outputs (its tables read first, its internal topics drained), leaves
the new group committed at the range's end, and fails naming what is left when it stops
early."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from cli_runner import streams
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from streams.cluster import Cluster, delete_topics
from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.replay import ReplayError, parse_position_spec, plan_replay
from streams.replay.positions import TopicSelection
from streams.replay.through import replay_through
from streams.schemas import default_catalog
from streams.testing import TopicFactory, produce_envelopes
from streams.testing.topics import unique_topic_name
from streams.topology import load_topology
from streams.topology.loader import import_file

MIRROR = Path(__file__).resolve().parents[2] / "topology" / "mirror.py"
ORDERS = Path(__file__).resolve().parents[2] / "topology" / "orders.py"
CODEC = AvroCodec(default_catalog())


def ids_by_partition(bootstrap: str, topic: str) -> dict[int, list[str]]:
    """Envelope ids in each partition of ``topic``, in offset order."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ids"})
    parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    ends = {
        p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts
    }
    todo = {p: e for p, e in ends.items() if e > 0}
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in todo])
    out: dict[int, list[str]] = {p: [] for p in parts}
    while todo:
        for msg in consumer.consume(500, timeout=0.5):
            p = cast(int, msg.partition())
            out[p].append(CODEC.decode(msg.value(), cast(Any, msg.headers())).id)
            if cast(int, msg.offset()) + 1 >= todo.get(p, 0):
                todo.pop(p, None)
    consumer.close()
    return out


SHAPES = Path(__file__).resolve().parent / "through_shapes.py"


def profiles(count: int) -> list[Envelope]:
    return [
        Envelope.new(
            "customer.profile",
            {"customer_id": c, "name": c, "tier": "gold", "limit_cents": 100},
            key=c,
        )
        for c in (f"c-{i:04d}" for i in range(count))
    ]


def out_count(bootstrap: str, topic: str) -> int:
    return sum(len(ids) for ids in ids_by_partition(bootstrap, topic).values())


@pytest.fixture
def owned(kafka_admin: AdminClient) -> Iterator[list[str]]:
    topics: list[str] = []
    yield topics
    delete_topics(kafka_admin, topics)


def test_a_range_through_a_topology_writes_exactly_its_outputs(
    kafka_bootstrap: str, make_topic: TopicFactory, owned: list[str]
) -> None:
    source = make_topic("orders", partitions=4)
    produce_envelopes(kafka_bootstrap, source, import_file(ORDERS).sample_orders(240), CODEC)
    before = ids_by_partition(kafka_bootstrap, source)
    assert all(len(ids) >= 10 for ids in before.values())

    app_id = unique_topic_name("rebuild")
    topology = load_topology(MIRROR, app_id=app_id, params={"input": source})
    owned.extend(topology.topics_written)
    cluster = Cluster(kafka_bootstrap)
    plan = plan_replay(
        cluster, TopicSelection(source, (0, 1, 3)), parse_position_spec("2"),
        parse_position_spec("0=9,1=5,3=latest"),
    )  # fmt: skip
    result = replay_through(cluster, plan, topology)

    expected = {0: before[0][2:9], 1: before[1][2:5], 3: before[3][2:]}
    mirrored = ids_by_partition(kafka_bootstrap, topology.topics_written[0])
    assert sorted(i for ids in mirrored.values() for i in ids) == sorted(
        i for ids in expected.values() for i in ids
    )
    assert result.processed == sum(len(ids) for ids in expected.values())
    assert result.committed == {0: 9, 1: 5, 3: len(before[3])}
    # partition 2 was not in the plan: the group starts it at its end, nothing reprocessed
    assert cluster.committed(app_id)[(source, 2)] == len(before[2])

    with pytest.raises(ReplayError, match="already has committed offsets"):
        replay_through(cluster, plan, topology)
    other = load_topology(MIRROR, app_id=unique_topic_name("other"), params={"input": "x"})
    with pytest.raises(ReplayError, match="not '"):
        replay_through(cluster, plan, other)


def test_the_replay_command_reprocesses_through_a_topology_file(
    kafka_bootstrap: str, make_topic: TopicFactory, owned: list[str]
) -> None:
    source, customers = make_topic("orders", partitions=2), make_topic("cards", partitions=2)
    produce_envelopes(kafka_bootstrap, customers, profiles(20), CODEC)
    produce_envelopes(kafka_bootstrap, source, import_file(ORDERS).sample_orders(30), CODEC)
    app_id = unique_topic_name("cli-rebuild")
    owned.append(f"{app_id}-out")
    args = ["replay", source, "--from", "earliest", "--through", str(SHAPES),
            "--set", f"input={source}", "--set", f"customers={customers}",
            "--app-id", app_id, "--json", "--execute"]  # fmt: skip
    out = streams(*args, bootstrap=kafka_bootstrap)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)["through"]
    assert report["app_id"] == app_id
    assert report["processed"] == 30
    assert report["tables"] == {customers: 20}
    assert report["outputs"] == {f"{app_id}-out": 30}
    assert out_count(kafka_bootstrap, f"{app_id}-out") == 30


@pytest.mark.parametrize(
    ("shape", "internal"),
    [
        ("join", []),  # the table read first, or the inner join drops every order
        ("rekey-window", ["per-tier-repartition"]),  # drained after the range
        ("read-back", ["staged"]),  # the chain's second half, through an owned topic
    ],
)
def test_a_range_is_rebuilt_whole_through_tables_and_internal_topics(
    kafka_bootstrap: str, make_topic: TopicFactory, owned: list[str], shape: str,
    internal: list[str],
) -> None:  # fmt: skip
    source, customers = make_topic("orders", partitions=2), make_topic("cards", partitions=2)
    produce_envelopes(kafka_bootstrap, customers, profiles(20), CODEC)
    orders = list(import_file(ORDERS).sample_orders(60))
    produce_envelopes(kafka_bootstrap, source, orders, CODEC)
    app_id = unique_topic_name(f"rebuild-{shape}")
    params = {"input": source, "customers": customers, "shape": shape}
    topology = load_topology(SHAPES, app_id=app_id, params=params)
    owned.extend(o.name for o in topology.owned_topics)
    cluster = Cluster(kafka_bootstrap)
    plan = plan_replay(cluster, TopicSelection(source), parse_position_spec("5"), None)
    in_range = plan.size

    result = replay_through(cluster, plan, topology)

    assert result.processed == in_range  # the range's records only, not internal ones
    assert out_count(kafka_bootstrap, f"{app_id}-out") == in_range
    assert result.outputs[f"{app_id}-out"] == in_range
    assert result.tables == ({} if shape == "rekey-window" else {customers: 20})
    assert result.internal == {f"{app_id}-{t}": in_range for t in internal}
    committed = cluster.committed(app_id)
    for topic in internal:
        ends = cluster.list_offsets(
            [(f"{app_id}-{topic}", p) for p in range(2)], "latest", read_committed=True
        )
        assert all(committed[tp] == end for tp, end in ends.items())


def test_a_replay_stopped_with_records_left_fails_naming_them(
    kafka_bootstrap: str, make_topic: TopicFactory, owned: list[str]
) -> None:
    source = make_topic("orders", partitions=1)
    produce_envelopes(kafka_bootstrap, source, import_file(ORDERS).sample_orders(5), CODEC)
    app_id = unique_topic_name("interrupted")
    topology = load_topology(
        SHAPES, app_id=app_id, params={"input": source, "shape": "interrupted"}
    )
    owned.extend(o.name for o in topology.owned_topics)
    cluster = Cluster(kafka_bootstrap)
    plan = plan_replay(cluster, TopicSelection(source), parse_position_spec("earliest"), None)
    with pytest.raises(ReplayError, match=rf"records left: {source} \(partition 0 at 0 of 5\)"):
        replay_through(cluster, plan, topology)


def test_a_range_written_in_transactions_ends_past_their_markers(
    kafka_bootstrap: str, make_topic: TopicFactory, owned: list[str]
) -> None:
    source = make_topic("orders", partitions=1)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": source})
    producer.init_transactions()
    orders = list(import_file(ORDERS).sample_orders(7))
    for batch in (orders[:4], orders[4:]):  # each transaction ends in a marker
        producer.begin_transaction()
        for order in batch:
            value, headers = CODEC.encode(order)
            producer.produce(source, value, key=order.key, headers=headers)
        producer.commit_transaction()
    app_id = unique_topic_name("past-markers")
    topology = load_topology(MIRROR, app_id=app_id, params={"input": source})
    owned.extend(topology.topics_written)
    cluster = Cluster(kafka_bootstrap)
    plan = plan_replay(cluster, TopicSelection(source), parse_position_spec("earliest"), None)
    assert plan.size == 9  # 7 orders, 2 markers

    result = replay_through(cluster, plan, topology)

    assert result.processed == 7
    assert out_count(kafka_bootstrap, topology.topics_written[0]) == 7
