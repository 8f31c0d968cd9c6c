"""``streams lag`` time lag: the age of the oldest record a group has yet to process."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from cli_runner import streams
from confluent_kafka import Consumer, Producer, TopicPartition

from streams.cluster import Cluster
from streams.replay.lag import lag

HOUR_MS = 3_600_000


def test_time_lag_is_the_age_of_the_record_at_the_committed_offset(
    kafka_bootstrap: str, make_topic: Callable[..., str]
) -> None:
    topic = make_topic("timelag", partitions=2)
    now_ms = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    # Partition 0: records 3 h, 2 h and 1 h old; partition 1: one record, 5 h old.
    for age_h, partition in ((3, 0), (2, 0), (1, 0), (5, 1)):
        producer.produce(topic, b"v", partition=partition, timestamp=now_ms - age_h * HOUR_MS)
    assert producer.flush(30) == 0
    group = f"g-{topic}"
    cluster = Cluster(kafka_bootstrap)

    cluster.alter_committed(group, {(topic, 0): 1, (topic, 1): 1})  # p0 behind, p1 caught up
    (row,) = lag(cluster, [group])
    assert (row.lag, row.max_partition_lag) == (2, 2)
    assert row.time_lag_s is not None
    assert 2 * 3600 <= row.time_lag_s < 2 * 3600 + 60  # the 2 h old record waits, not the 5 h

    cluster.alter_committed(group, {(topic, 0): 1, (topic, 1): 0})  # now p1's 5 h record too
    (row,) = lag(cluster, [group])
    assert row.time_lag_s is not None and 5 * 3600 <= row.time_lag_s < 5 * 3600 + 60

    other = f"g2-{topic}"  # another group behind on the same partition, further back
    cluster.alter_committed(other, {(topic, 0): 0})
    rows = {r.group: r.time_lag_s for r in lag(cluster, [group, other])}
    assert rows[other] is not None and 3 * 3600 <= rows[other] < 3 * 3600 + 60
    assert rows[group] is not None and 5 * 3600 <= rows[group] < 5 * 3600 + 60

    cluster.alter_committed(group, {(topic, 0): 3, (topic, 1): 1})
    (row,) = lag(cluster, [group])
    assert (row.lag, row.time_lag_s) == (0, 0.0)  # caught up: no time lag either

    cluster.alter_committed(group, {(topic, 0): 2, (topic, 1): 1})
    out = streams("lag", "--group", group, "--json", bootstrap=kafka_bootstrap)
    assert out.returncode == 0, out.stderr
    (shown,) = json.loads(out.stdout)
    assert shown["lag"] == 1 and 3600 <= shown["time_lag_s"] < 3600 + 60
    table = streams("lag", "--group", group, bootstrap=kafka_bootstrap)
    assert table.returncode == 0, table.stderr
    assert "time lag" in table.stdout and "1h 0m" in table.stdout


def test_an_idle_exactly_once_group_on_a_transactional_topic_has_no_lag(
    kafka_bootstrap: str, make_topic: Callable[..., str]
) -> None:
    # A topic written in transactions has a commit marker after each one, an offset no
    # consumer gets: an exactly-once app, committing the offset after the last record it
    # processed, sits one short of the end when it has processed everything.
    topic, out = make_topic("txn", partitions=1), make_topic("txn-out", partitions=1)
    writer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": topic})
    writer.init_transactions(30)
    for batch in range(3):
        writer.begin_transaction()
        for i in range(2):
            writer.produce(topic, f"{batch}-{i}".encode(), partition=0)
        writer.commit_transaction(30)
    group = f"g-{topic}"
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_bootstrap,
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    app = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": out})
    app.init_transactions(30)
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        read, deadline = 0, time.monotonic() + 30
        while read < 6:
            assert time.monotonic() < deadline, f"read {read} of 6 records"
            msg = consumer.poll(1.0)
            if msg is None or msg.error() is not None:
                continue
            read += 1
            app.begin_transaction()
            app.produce(out, msg.value())
            app.send_offsets_to_transaction(
                [TopicPartition(topic, 0, msg.offset() + 1)],
                consumer.consumer_group_metadata(),
                30,
            )
            app.commit_transaction(30)
    finally:
        consumer.close()
    cluster = Cluster(kafka_bootstrap)
    (committed,) = cluster.committed(group).values()
    assert committed < cluster.list_offsets([(topic, 0)], "latest")[(topic, 0)]  # the marker

    (row,) = lag(cluster, [group])
    assert (row.lag, row.time_lag_s) == (0, 0.0)
    idle = streams("lag", "--group", group, "--threshold", "0", bootstrap=kafka_bootstrap)
    assert idle.returncode == 0, idle.stderr

    cluster.alter_committed(group, {(topic, 0): 3})  # the last two batches unread
    (row,) = lag(cluster, [group])
    assert row.lag > 0 and row.time_lag_s is not None
    assert (
        streams("lag", "--group", group, "--threshold", "0", bootstrap=kafka_bootstrap).returncode
        == 3
    )
