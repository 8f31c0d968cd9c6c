"""Our reset plans equal Kafka's own ``kafka-consumer-groups --reset-offsets --dry-run``.

Runs ``org.apache.kafka.tools.consumer.group.ConsumerGroupCommand`` from the broker's jars
on the same group, topic and position, and compares the plans partition for partition.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from test_replay_seed import MIN, Seeded, seed

from streams.broker import ensure_libs
from streams.broker.tools import find_java
from streams.cluster import Cluster
from streams.replay import (
    dump_plan,
    parse_position_spec,
    parse_topic_selection,
    plan_from_offsets,
    plan_reset,
    read_plan,
    write_plan,
)
from streams.replay.positions import Earliest, PositionSpec, TopicSelection, format_ms

_CSV_ROW = re.compile(r'^"?([^",\s]+)"?,(\d+),(\d+)$')  # Jackson quotes long names


def kafka_export(bootstrap: str, group: str, topic: str, *scenario: str) -> list[str]:
    """The CSV lines of Kafka's dry-run plan (``--export``) for ``scenario`` options."""
    cmd = [
        str(find_java()),
        "-cp",
        f"{ensure_libs()}/*",
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "--bootstrap-server", bootstrap,
        "--group", group,
        "--reset-offsets",
        *(["--topic", topic] if "--from-file" not in scenario else []),
        *scenario,
        "--dry-run",
        "--export",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if _CSV_ROW.match(line)]
    assert lines, proc.stdout + proc.stderr  # (it also prints warnings on stdout)
    return lines


def kafka_plan(
    bootstrap: str, group: str, topic: str, *scenario: str
) -> dict[tuple[str, int], int]:
    """Kafka's dry-run plan for ``scenario`` options, per partition."""
    plan = {}
    for line in kafka_export(bootstrap, group, topic, *scenario):
        match = _CSV_ROW.match(line)
        assert match is not None
        plan[(match.group(1), int(match.group(2)))] = int(match.group(3))
    return plan


@pytest.fixture
def seeded(
    kafka_bootstrap: str, kafka_admin: AdminClient, make_topic: Callable[..., str]
) -> Seeded:
    return seed(kafka_bootstrap, kafka_admin, make_topic(partitions=4))


def kafka_time(ms: int) -> str:
    return format_ms(ms).replace("+00:00", "Z")  # 2026-11-29T10:00:00.000Z, as Kafka parses


def test_our_plans_match_kafkas_tool(kafka_bootstrap: str, seeded: Seeded, tmp_path: Path) -> None:
    cluster = Cluster(kafka_bootstrap)
    topic, t0 = seeded.topic, seeded.t0
    group = f"g-{topic}"
    # an inactive group with commits, some out of today's log range (p3 starts at 3)
    cluster.alter_committed(group, {(topic, 0): 6, (topic, 1): 2, (topic, 2): 0, (topic, 3): 1})
    cases = [
        ("earliest", ["--to-earliest"]),
        ("latest", ["--to-latest"]),
        ("7", ["--to-offset", "7"]),
        ("0", ["--to-offset", "0"]),
        ("-3", ["--shift-by", "-3"]),
        ("+4", ["--shift-by", "4"]),
        ("+1000", ["--shift-by", "1000"]),
        (kafka_time(t0 - MIN), ["--to-datetime", kafka_time(t0 - MIN)]),
        (kafka_time(t0 + 42 * MIN), ["--to-datetime", kafka_time(t0 + 42 * MIN)]),
        (kafka_time(t0 + 500 * MIN), ["--to-datetime", kafka_time(t0 + 500 * MIN)]),
        ("PT9H", ["--by-duration", "PT9H"]),
        ("PT9H45M", ["--by-duration", "PT9H45M"]),
    ]
    seen = set()
    for ours, theirs in cases:
        plan = plan_reset(cluster, group, [TopicSelection(topic)], parse_position_spec(ours))
        expected = kafka_plan(kafka_bootstrap, group, topic, *theirs)
        assert plan.offsets() == expected, (ours, theirs)
        seen.add(tuple(sorted(expected.items())))
    assert len(seen) >= 8  # the cases exercise genuinely different plans

    # some partitions only, as topic:0,3 (Kafka's --topic takes the same form)
    some = plan_reset(cluster, group, [parse_topic_selection(f"{topic}:0,3")],
                      parse_position_spec("-2"))  # fmt: skip
    assert some.offsets() == kafka_plan(kafka_bootstrap, group, f"{topic}:0,3", "--shift-by", "-2")
    assert some.offsets() == {(topic, 0): 4, (topic, 3): 3}

    # our CSV is Kafka's, line for line
    ours_csv = dump_plan(
        plan_reset(cluster, group, [TopicSelection(topic)], PositionSpec(Earliest())).offsets()
    )
    assert sorted(ours_csv.splitlines()) == sorted(
        kafka_export(kafka_bootstrap, group, topic, "--to-earliest")
    )

    # a plan exported by us loads in Kafka's --from-file, and theirs (clamped) in ours
    plan_file = tmp_path / "plan.csv"
    write_plan(plan_file, {(topic, 0): 4, (topic, 1): 99, (topic, 3): 0})
    expected = kafka_plan(kafka_bootstrap, group, topic, "--from-file", str(plan_file))
    ours = plan_from_offsets(cluster, group, read_plan(plan_file, group))
    assert ours.offsets() == expected == {(topic, 0): 4, (topic, 1): 5, (topic, 3): 3}

    # nothing was applied by any of this: the commits are those we started with
    assert cluster.committed(group) == {(topic, 0): 6, (topic, 1): 2, (topic, 2): 0, (topic, 3): 1}
