"""``streams lag``: lag per group and topic, and a non-zero exit above a threshold."""

from __future__ import annotations

import json
from collections.abc import Callable

from confluent_kafka.admin import AdminClient
from test_offsets_cli import streams
from test_replay_seed import seed

from streams.replay import Cluster
from streams.replay.lag import lag


def test_lag_per_group_and_topic_and_the_threshold_exit(
    kafka_bootstrap: str, kafka_admin: AdminClient, make_topic: Callable[..., str]
) -> None:
    seeded = seed(kafka_bootstrap, kafka_admin, make_topic(partitions=4))
    other = make_topic("other", partitions=1)
    group = f"g-{seeded.topic}"
    cluster = Cluster(kafka_bootstrap)
    commits = {(seeded.topic, 0): 6, (seeded.topic, 1): 5, (seeded.topic, 3): 10, (other, 0): 0}
    cluster.alter_committed(group, commits)

    rows = {(r.group, r.topic): r for r in lag(cluster)}  # every group, ours among them
    mine = rows[(group, seeded.topic)]
    assert (mine.lag, mine.max_partition_lag, mine.partitions) == (14, 10, 3)
    assert rows[(group, other)].lag == 0

    out = streams(kafka_bootstrap, "lag", "--group", group, "--json", "--threshold", "14")
    assert out.returncode == 0, out.stderr
    assert [(r["topic"], r["lag"]) for r in json.loads(out.stdout)] == sorted(
        [(seeded.topic, 14), (other, 0)]
    )
    above = streams(kafka_bootstrap, "lag", "--group", group, "--threshold", "13")
    assert above.returncode == 3
    assert f"worst {group}/{seeded.topic} at 14" in above.stderr
