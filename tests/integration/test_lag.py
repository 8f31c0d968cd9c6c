"""``streams lag``: lag per group and topic, and a non-zero exit above a threshold."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from cli_runner import streams
from confluent_kafka.admin import AdminClient
from test_replay_seed import seed

from streams.cluster import Cluster, create_topic, delete_topics
from streams.failures.topics import retry_topic
from streams.replay import group_offsets
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

    out = streams("lag", "--group", group, "--json", "--threshold", "14", bootstrap=kafka_bootstrap)
    assert out.returncode == 0, out.stderr
    assert [(r["topic"], r["lag"]) for r in json.loads(out.stdout)] == sorted(
        [(seeded.topic, 14), (other, 0)]
    )
    above = streams("lag", "--group", group, "--threshold", "13", bootstrap=kafka_bootstrap)
    assert above.returncode == 3
    assert f"worst {group}/{seeded.topic} at 14" in above.stderr


def test_commits_outliving_their_topic_do_not_break_lag_or_show(
    kafka_bootstrap: str, kafka_admin: AdminClient, make_topic: Callable[..., str]
) -> None:
    kept, gone = make_topic("kept", partitions=1), make_topic("gone", partitions=1)
    group = f"g-{kept}"
    cluster = Cluster(kafka_bootstrap)
    cluster.alter_committed(group, {(kept, 0): 0, (gone, 0): 0})
    delete_topics(kafka_admin, [gone])
    deadline = time.monotonic() + 30
    while gone in cluster.topics():
        assert time.monotonic() < deadline, "the topic was never deleted"
        time.sleep(0.2)  # polling the cluster's metadata until the deletion shows
    assert [(r.topic, r.lag) for r in lag(cluster, [group])] == [(kept, 0)]
    rows = {p.topic: (p.log_end, p.lag) for p in group_offsets(cluster, group).partitions}
    # The group coordinator purges offsets of deleted topics on its own schedule: until it
    # does, `show` lists them without a log end or lag instead of failing.
    assert rows.pop(kept) == (0, 0)
    assert rows in ({}, {gone: (None, None)})


def test_an_apps_retry_tier_is_listed_under_the_input_it_serves(
    kafka_bootstrap: str, kafka_admin: AdminClient, make_topic: Callable[..., str], app_id: str
) -> None:
    first, second = make_topic("a-in", partitions=2), make_topic("b-in", partitions=1)
    tier = retry_topic(app_id, first, 1)  # sorts after both inputs: listed under its own
    create_topic(kafka_admin, tier, partitions=2)  # deleted with the app's topics
    commits = {(first, 0): 0, (first, 1): 0, (second, 0): 0, (tier, 0): 0, (tier, 1): 0}
    Cluster(kafka_bootstrap).alter_committed(app_id, commits)  # the group is the app id
    listed = [(first, None), (tier, first), (second, None)]

    out = streams("lag", "--group", app_id, "--json", bootstrap=kafka_bootstrap)
    assert out.returncode == 0, out.stderr
    assert [(r["topic"], r["serves"]) for r in json.loads(out.stdout)] == listed

    shown = streams("offsets", "show", "--group", app_id, "--json", bootstrap=kafka_bootstrap)
    assert shown.returncode == 0, shown.stderr
    rows = json.loads(shown.stdout)["partitions"]
    assert [(r["topic"], r["partition"], r["serves"]) for r in rows] == [
        (first, 0, None), (first, 1, None), (tier, 0, first), (tier, 1, first), (second, 0, None),
    ]  # fmt: skip

    # At 80 columns (a terminal's default), below 100: one line per record, folded where a
    # name is longer than a line.
    table = streams("offsets", "show", "--group", app_id, bootstrap=kafka_bootstrap, columns=80)
    assert table.returncode == 0, table.stderr
    assert f"topic={tier}partition=0serves={first}" in "".join(table.stdout.split())
