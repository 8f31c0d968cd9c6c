"""``replay --through``: a range reprocessed by a topology under a new app id writes
exactly that range's outputs, and leaves the new group committed at the range's end."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from test_offsets_cli import streams

from streams.cluster import Cluster, delete_topics
from streams.codec import AvroCodec
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
    source = make_topic("orders", partitions=2)
    produce_envelopes(kafka_bootstrap, source, import_file(ORDERS).sample_orders(30), CODEC)
    app_id = unique_topic_name("cli-rebuild")
    owned.append(f"{app_id}-mirror")
    args = ["replay", source, "--from", "earliest", "--through", str(MIRROR),
            "--set", f"input={source}", "--app-id", app_id, "--json", "--execute"]  # fmt: skip
    out = streams(kafka_bootstrap, *args)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["through"]["app_id"] == app_id
    assert report["through"]["processed"] == 30
    mirrored = ids_by_partition(kafka_bootstrap, f"{app_id}-mirror")
    assert sum(len(ids) for ids in mirrored.values()) == 30
