"""Every position form resolves to the expected offsets on a real broker."""

from __future__ import annotations

import pytest
from test_replay_seed import MIN, Seeded

from streams.cluster import Cluster, TopicNotFoundError
from streams.replay import PositionError, RangeError, plan_replay
from streams.replay.positions import (
    PositionSpec,
    TopicSelection,
    format_ms,
    parse_position_spec,
)

PARTS = range(4)


def starts(cluster: Cluster, seeded: Seeded, text: str, **kw: object) -> dict[int, int]:
    plan = plan_replay(cluster, TopicSelection(seeded.topic), parse_position_spec(text), **kw)  # type: ignore[arg-type]
    assert all(r.end == seeded.log_end(r.partition) for r in plan.ranges)
    return {r.partition: r.start for r in plan.ranges}


def test_every_position_form_resolves_to_the_expected_offsets(
    kafka_bootstrap: str, seeded: Seeded
) -> None:
    cluster = Cluster(kafka_bootstrap)
    t0 = seeded.t0
    assert starts(cluster, seeded, "earliest") == {p: seeded.log_start(p) for p in PARTS}
    assert starts(cluster, seeded, "latest") == {p: seeded.log_end(p) for p in PARTS}
    # offsets clamp into [log start, log end]
    assert starts(cluster, seeded, "1") == {0: 1, 1: 1, 2: 0, 3: 3}
    assert starts(cluster, seeded, "7") == {0: 7, 1: 5, 2: 0, 3: 7}
    # times: ISO with a zone, and epoch ms
    for ms in (t0 - MIN, t0 + 35 * MIN, t0 + 61 * MIN, t0 + 200 * MIN):
        expected = {p: seeded.offset_for_time(p, ms) for p in PARTS}
        assert starts(cluster, seeded, format_ms(ms).replace("+00:00", "Z")) == expected
        assert starts(cluster, seeded, f"@{ms}") == expected
    # durations ago (t0 is 10 h + 150 s ago, so 9h is 60.x minutes after t0)
    expected = {p: seeded.offset_for_time(p, t0 + 60 * MIN + 150_000) for p in PARTS}
    assert expected == {0: 7, 1: 4, 2: 0, 3: 13}
    assert starts(cluster, seeded, "9h") == expected
    assert starts(cluster, seeded, "PT9H") == expected
    # per-partition positions select those partitions
    plan = plan_replay(cluster, TopicSelection(seeded.topic), parse_position_spec("0=4,3=earliest"))
    assert [(r.partition, r.start, r.end) for r in plan.ranges] == [(0, 4, 10), (3, 3, 20)]


def test_ranges_with_an_end(kafka_bootstrap: str, seeded: Seeded) -> None:
    cluster = Cluster(kafka_bootstrap)
    start = parse_position_spec(format_ms(seeded.t0 + 25 * MIN))
    end = parse_position_spec(format_ms(seeded.t0 + 55 * MIN))
    plan = plan_replay(cluster, TopicSelection(seeded.topic, (0, 1, 3)), start, end)
    assert [(r.partition, r.start, r.end) for r in plan.ranges] == [
        (0, 3, 6),
        (1, 0, 3),
        (3, 5, 11),
    ]


def test_shifts_need_a_group_with_commits(kafka_bootstrap: str, seeded: Seeded) -> None:
    cluster = Cluster(kafka_bootstrap)
    with pytest.raises(PositionError, match="give --group"):
        starts(cluster, seeded, "-2")
    group = f"g-{seeded.topic}"
    cluster.alter_committed(group, {(seeded.topic, p): 5 for p in PARTS})
    assert starts(cluster, seeded, "-2", group=group) == {0: 3, 1: 3, 2: 0, 3: 3}
    assert starts(cluster, seeded, "+100", group=group) == {p: seeded.log_end(p) for p in PARTS}


def test_bad_input_is_refused(kafka_bootstrap: str, seeded: Seeded) -> None:
    cluster = Cluster(kafka_bootstrap)
    sel = TopicSelection(seeded.topic)
    with pytest.raises(RangeError, match="before --from"):
        plan_replay(cluster, sel, parse_position_spec("8"), parse_position_spec("2"))
    with pytest.raises(PositionError, match="in the future"):
        plan_replay(cluster, sel, parse_position_spec("2999-01-01T00:00:00Z"))
    with pytest.raises(TopicNotFoundError, match="does not exist"):
        plan_replay(cluster, TopicSelection(seeded.topic + "-nope"), PositionSpec())
    with pytest.raises(TopicNotFoundError, match="no partition 7"):
        plan_replay(cluster, TopicSelection(seeded.topic, (0, 7)), parse_position_spec("0"))
