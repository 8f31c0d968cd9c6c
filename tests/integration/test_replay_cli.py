"""``streams replay`` from the command line: a dry run counts, a replay copies."""

from __future__ import annotations

import json
from collections.abc import Callable

from cli_runner import streams
from confluent_kafka.admin import AdminClient
from test_replay_copy import read_all
from test_replay_seed import MIN, seed

from streams.replay.positions import format_ms


def test_replay_command_dry_run_then_copy(
    kafka_bootstrap: str, kafka_admin: AdminClient, make_topic: Callable[..., str]
) -> None:
    seeded = seed(kafka_bootstrap, kafka_admin, make_topic(partitions=4))
    target = make_topic("target", partitions=3)
    args = ["replay", f"{seeded.topic}:0,3", "--from", format_ms(seeded.t0 + 25 * MIN),
            "--to", "3=15,0=latest", "--into", target, "--type", "order.shipped"]  # fmt: skip
    # --to gives 0 and 3 their own ends; p0 from offset 3 (odd offsets are order.shipped)
    dry = streams(*args, "--json", bootstrap=kafka_bootstrap)  # a dry run: no --execute
    assert dry.returncode == 0, dry.stderr
    report = json.loads(dry.stdout)
    ranges = {p["partition"]: (p["start"], p["end"]) for p in report["plan"]["partitions"]}
    assert ranges == {0: (3, 10), 3: (5, 15)}
    copies = {p["partition"]: p["copied"] for p in report["result"]["partitions"]}
    assert copies == {0: 4, 3: 5}
    assert read_all(kafka_bootstrap, target) == []

    done = streams(*args, "--execute", bootstrap=kafka_bootstrap)
    assert done.returncode == 0, done.stderr
    assert "copied 9 of 17 records" in done.stdout and "all acknowledged" in done.stdout
    assert len(read_all(kafka_bootstrap, target)) == 9

    # A dry run into a topic that does not exist fails as the copy would, before reading.
    missing = f"{target}-missing"
    for execute in ([], ["--execute"]):
        refused = streams("replay", seeded.topic, "--from", "earliest",
                          "--into", missing, *execute, bootstrap=kafka_bootstrap)  # fmt: skip
        assert refused.returncode == 1, refused.stdout
        assert refused.stderr.splitlines() == [
            f"error: target topic {missing!r} does not exist: create it first"
        ]
        assert "would copy" not in refused.stdout
