"""Our reset plans equal Kafka's own ``kafka-consumer-groups --reset-offsets --dry-run``.

Runs ``org.apache.kafka.tools.consumer.group.ConsumerGroupCommand`` from the broker's jars
on the same group, topic and position, and compares the plans partition for partition.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from test_replay_seed import MIN, Seeded

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


# A JVM that lives for one request: the client compiler alone and the serial collector
# start it on about two thirds of the CPU of the default (tiered C2, G1).
_SHORT_LIVED_JVM = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
# Calls run side by side: each is a JVM of its own that only reads (--dry-run), so they
# are independent; a few at once, as most of a call's time is its JVM's start.
_AT_ONCE = 4

Call = tuple[str, Sequence[str]]
"""One run of the tool: its ``--topic`` (ignored with ``--from-file``) and scenario options."""


def kafka_export(
    bootstrap: str, group: str, topic: str, *scenario: str, jvm: Sequence[str] = ()
) -> list[str]:
    """The CSV lines of Kafka's dry-run plan (``--export``) for ``scenario`` options;
    ``jvm``: options of the JVM that runs the tool."""
    cmd = [
        str(find_java()),
        *_SHORT_LIVED_JVM,
        *jvm,
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


def kafka_exports(
    bootstrap: str, group: str, calls: Sequence[Call], archive: Path
) -> list[list[str]]:
    """``kafka_export`` of each call, in the order of ``calls``.

    The first call saves the classes it loaded, parsed and verified, to ``archive`` (a
    dynamic class-data sharing archive, JDK 13+), and the others, side by side, map them
    from it: half the CPU of a start. A JVM that cannot use it only says so on its output
    (lines that are not the plan's) and loads its classes as usual."""
    first, *rest = calls
    dumped = kafka_export(
        bootstrap, group, first[0], *first[1], jvm=[f"-XX:ArchiveClassesAtExit={archive}"]
    )
    shared = [f"-XX:SharedArchiveFile={archive}"]
    with ThreadPoolExecutor(_AT_ONCE) as pool:
        others = pool.map(
            lambda call: kafka_export(bootstrap, group, call[0], *call[1], jvm=shared), rest
        )
        return [dumped, *others]


def as_plan(lines: Sequence[str]) -> dict[tuple[str, int], int]:
    """A dry-run plan's CSV lines, per partition."""
    plan = {}
    for line in lines:
        match = _CSV_ROW.match(line)
        assert match is not None
        plan[(match.group(1), int(match.group(2)))] = int(match.group(3))
    return plan


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
    # some partitions only, as topic:0,3 (Kafka's --topic takes the same form)
    some = plan_reset(cluster, group, [parse_topic_selection(f"{topic}:0,3")],
                      parse_position_spec("-2"))  # fmt: skip
    # a plan exported by us loads in Kafka's --from-file, and theirs (clamped) in ours
    plan_file = tmp_path / "plan.csv"
    write_plan(plan_file, {(topic, 0): 4, (topic, 1): 99, (topic, 3): 0})
    from_file = plan_from_offsets(cluster, group, read_plan(plan_file, group))

    # every plan of Kafka's asked at once: the calls only read
    calls: list[Call] = [(topic, theirs) for _, theirs in cases]
    calls += [
        (f"{topic}:0,3", ["--shift-by", "-2"]),
        (topic, ["--from-file", str(plan_file)]),
    ]
    *exports, some_export, from_file_export = kafka_exports(
        kafka_bootstrap, group, calls, tmp_path / "tool.jsa"
    )

    theirs_of = {ours: export for (ours, _), export in zip(cases, exports, strict=True)}
    seen = set()
    for ours, theirs in cases:
        plan = plan_reset(cluster, group, [TopicSelection(topic)], parse_position_spec(ours))
        expected = as_plan(theirs_of[ours])
        assert plan.offsets() == expected, (ours, theirs)
        seen.add(tuple(sorted(expected.items())))
    assert len(seen) >= 8  # the cases exercise genuinely different plans

    assert some.offsets() == as_plan(some_export)
    assert some.offsets() == {(topic, 0): 4, (topic, 3): 3}

    # our CSV is Kafka's, line for line
    earliest = plan_reset(cluster, group, [TopicSelection(topic)], PositionSpec(Earliest()))
    assert sorted(dump_plan(earliest.offsets()).splitlines()) == sorted(theirs_of["earliest"])

    assert from_file.offsets() == as_plan(from_file_export)
    assert from_file.offsets() == {(topic, 0): 4, (topic, 1): 5, (topic, 3): 3}

    # nothing was applied by any of this: the commits are those we started with
    assert cluster.committed(group) == {(topic, 0): 6, (topic, 1): 2, (topic, 2): 0, (topic, 3): 1}
