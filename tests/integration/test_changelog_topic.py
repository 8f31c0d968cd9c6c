"""Changelog topics on the real broker: created right, refused when wrong, corruption named."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import ConfigResource

from streams.cluster import Topics, create_topic
from streams.state import (
    ChangelogCompactionError,
    ChangelogPartitionCountError,
    ChangelogStore,
    CorruptChangelogError,
    RocksDBBackend,
    ensure_changelog_topic,
)
from streams.state.changelog import EXPIRES_AT, SOURCE_OFFSET, SOURCE_PARTITION, VALUE_TAG


def cleanup_policy(admin: AdminClient, topic: str) -> str:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    configs = admin.describe_configs([resource])[resource].result(timeout=30)
    return str(configs["cleanup.policy"].value)


def test_a_missing_changelog_is_created_compacted_with_the_input_partition_count(
    kafka_admin: AdminClient, app_id: str
) -> None:
    topic = f"{app_id}-dedup-changelog"
    assert ensure_changelog_topic(Topics(kafka_admin), topic, partitions=3)
    assert len(kafka_admin.list_topics(topic, timeout=10).topics[topic].partitions) == 3
    assert cleanup_policy(kafka_admin, topic) == "compact"
    assert not ensure_changelog_topic(Topics(kafka_admin), topic, partitions=3)  # valid: left alone


def test_a_changelog_with_the_wrong_partition_count_is_refused(
    kafka_admin: AdminClient, app_id: str
) -> None:
    topic = f"{app_id}-dedup-changelog"
    create_topic(kafka_admin, topic, partitions=2, config={"cleanup.policy": "compact"})
    with pytest.raises(ChangelogPartitionCountError, match="has 2 partitions but the input has 4"):
        ensure_changelog_topic(Topics(kafka_admin), topic, partitions=4)


def test_a_changelog_without_compaction_is_refused(kafka_admin: AdminClient, app_id: str) -> None:
    topic = f"{app_id}-dedup-changelog"
    create_topic(kafka_admin, topic, partitions=1, config={"cleanup.policy": "delete"})
    with pytest.raises(ChangelogCompactionError, match=r"cleanup\.policy='delete'"):
        ensure_changelog_topic(Topics(kafka_admin), topic, partitions=1)


@pytest.mark.parametrize(
    "case",
    [
        (b"v", [(SOURCE_OFFSET, b"not-a-number")], "streams.source.offset"),
        (b"v", [(EXPIRES_AT, b"soon")], "streams.expires.ms"),
        (b"v", [(SOURCE_PARTITION, b"3")], "tagged with input partition 3"),
        (VALUE_TAG + bytes(5), None, "shorter than its 18-byte prefix"),  # cut short
    ],
)
def test_a_corrupt_changelog_record_stops_the_restore_naming_its_offset(
    kafka_bootstrap: str,
    kafka_admin: AdminClient,
    app_id: str,
    tmp_path: Path,
    case: tuple[bytes, list[tuple[str, bytes]] | None, str],
) -> None:
    value, headers, reason = case
    store = ChangelogStore(
        app_id,
        "kv",
        RocksDBBackend(),
        consumer_config={"bootstrap.servers": kafka_bootstrap},
        state_dir=tmp_path,
    )
    store.ensure_changelog(Topics(kafka_admin), input_partitions=1)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    errors: list[object] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(err)

    topic = store.changelog_topic
    for i in range(5):
        producer.produce(topic, key=f"k{i}".encode(), value=b"v", partition=0)
    producer.produce(topic, key=b"bad", value=value, partition=0, headers=headers)
    producer.produce(topic, key=b"after", value=b"v", partition=0, on_delivery=on_delivery)
    assert producer.flush(30) == 0
    assert errors == []

    with pytest.raises(CorruptChangelogError) as caught:
        store.open(0, committed_offset=None)
    assert caught.value.offset == 5
    assert f"{store.changelog_topic}[0]@5" in str(caught.value)
    assert reason in str(caught.value)
    assert 0 not in store.partitions  # nothing is processed on a partition that did not restore

    # The checkpoint did not move past it: a restart meets the same record again, rather
    # than starting after it.
    again = ChangelogStore(
        app_id,
        "kv",
        RocksDBBackend(),
        consumer_config={"bootstrap.servers": kafka_bootstrap},
        state_dir=tmp_path,
    )
    with pytest.raises(CorruptChangelogError) as caught_again:
        again.open(0, committed_offset=None)
    assert caught_again.value.offset == 5
