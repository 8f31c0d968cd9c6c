"""``streams lag`` time lag: the age of the oldest record a group has yet to process."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from confluent_kafka import Producer
from test_offsets_cli import streams

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
    out = streams(kafka_bootstrap, "lag", "--group", group, "--json")
    assert out.returncode == 0, out.stderr
    (shown,) = json.loads(out.stdout)
    assert shown["lag"] == 1 and 3600 <= shown["time_lag_s"] < 3600 + 60
    table = streams(kafka_bootstrap, "lag", "--group", group)
    assert table.returncode == 0, table.stderr
    assert "time lag" in table.stdout and "1h 0m" in table.stdout
