"""``streams offsets show | reset`` on a real broker: dry run by default, --execute
applies, CSV plans round-trip, an active group is refused, bad input is one line."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cli_runner import streams, streams_process
from confluent_kafka import Consumer
from test_replay_seed import Seeded

from streams.cluster import Cluster


@pytest.fixture
def group(kafka_bootstrap: str, seeded: Seeded) -> str:
    """An inactive group with commits 6, 2, 0, 10 on the seeded topic."""
    name = f"g-{seeded.topic}"
    commits = {
        (seeded.topic, 0): 6,
        (seeded.topic, 1): 2,
        (seeded.topic, 2): 0,
        (seeded.topic, 3): 10,
    }
    Cluster(kafka_bootstrap).alter_committed(name, commits)
    return name


def committed(bootstrap: str, group: str) -> dict[int, int]:
    return {p: o for (_t, p), o in Cluster(bootstrap).committed(group).items()}


def test_reset_is_a_dry_run_until_execute(kafka_bootstrap: str, seeded: Seeded, group: str) -> None:
    args = ("offsets", "reset", "--group", group, "--topic", seeded.topic, "--to", "-4", "--json")
    dry = streams(*args, bootstrap=kafka_bootstrap)
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert plan["executed"] is False
    assert {r["partition"]: (r["current"], r["new"]) for r in plan["partitions"]} == {
        0: (6, 2),
        1: (2, 0),
        2: (0, 0),
        3: (10, 6),
    }
    assert committed(kafka_bootstrap, group) == {0: 6, 1: 2, 2: 0, 3: 10}

    done = streams(*args, "--execute", bootstrap=kafka_bootstrap)
    assert done.returncode == 0, done.stderr
    assert committed(kafka_bootstrap, group) == {0: 2, 1: 0, 2: 0, 3: 6}


def test_plans_export_and_load_as_csv(
    kafka_bootstrap: str, seeded: Seeded, group: str, tmp_path: Path
) -> None:
    plan = tmp_path / "plan.csv"
    out = streams("offsets", "reset", "earliest", "--group", group,
                  "--topic", f"{seeded.topic}:0,3", "--export", str(plan),
                  bootstrap=kafka_bootstrap)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "dry run: nothing changed" in out.stdout
    assert sorted(plan.read_text().splitlines()) == [
        f'"{seeded.topic}",0,0',
        f'"{seeded.topic}",3,3',
    ]
    applied = streams("offsets", "reset", "--group", group,
                      "--from-file", str(plan), "--execute", bootstrap=kafka_bootstrap)  # fmt: skip
    assert applied.returncode == 0, applied.stderr
    assert committed(kafka_bootstrap, group) == {0: 0, 1: 2, 2: 0, 3: 3}


def test_show_lists_commits_log_ends_and_lag(
    kafka_bootstrap: str, seeded: Seeded, group: str
) -> None:
    out = streams("offsets", "show", "--group", group, "--json", bootstrap=kafka_bootstrap)
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)
    assert shown["state"] == "Empty" and shown["members"] == []
    rows = {r["partition"]: (r["committed"], r["log_end"], r["lag"]) for r in shown["partitions"]}
    assert rows == {0: (6, 10, 4), 1: (2, 5, 3), 2: (0, 0, 0), 3: (10, 20, 10)}
    assert shown["lag"] == 17


@pytest.fixture
def active_member(kafka_bootstrap: str, seeded: Seeded, group: str) -> Iterator[Consumer]:
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group,
                         "enable.auto.commit": False})  # fmt: skip
    consumer.subscribe([seeded.topic])
    deadline = time.monotonic() + 30
    while not consumer.assignment():
        assert time.monotonic() < deadline, "the consumer never joined its group"
        consumer.poll(0.2)
    yield consumer
    consumer.close()


def test_reset_refuses_a_group_with_active_members(
    kafka_bootstrap: str, seeded: Seeded, group: str, active_member: Consumer
) -> None:
    out = streams("offsets", "reset", "--group", group, "--topic",
                  seeded.topic, "earliest", "--execute", bootstrap=kafka_bootstrap)  # fmt: skip
    assert out.returncode == 1
    assert "active member" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert committed(kafka_bootstrap, group) == {0: 6, 1: 2, 2: 0, 3: 10}
    shown = json.loads(
        streams("offsets", "show", "--group", group, "--json", bootstrap=kafka_bootstrap).stdout
    )
    assert len(shown["members"]) == 1 and shown["state"] == "Stable"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["offsets", "reset", "--group", "no-such-group", "--topic", "{topic}", "earliest"],
         "does not exist"),
        (["offsets", "reset", "--group", "{group}", "--topic", "{topic}:9", "earliest"],
         "no partition 9"),
        (["offsets", "reset", "--group", "{group}", "--topic", "{topic}-x", "earliest"],
         "does not exist"),
        (["offsets", "reset", "--group", "{group}", "--topic", "{topic}", "2999-01-01T00:00:00Z"],
         "in the future"),
        (["offsets", "show", "--group", "no-such-group"], "does not exist"),
        (["replay", "{topic}", "--from", "8", "--to", "2", "--into", "{topic}", "--execute"],
         "before --from"),
        (["replay", "{topic}", "--from", "earliest", "--into", "{topic}", "--execute"],
         "into itself"),
        (["lag", "--group", "no-such-group"], "does not exist"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_changes_nothing(
    kafka_bootstrap: str, seeded: Seeded, group: str, args: list[str], message: str
) -> None:
    argv = [a.format(topic=seeded.topic, group=group) for a in args]
    out = streams(*argv, *(["--execute"] if "reset" in argv else []), bootstrap=kafka_bootstrap)
    assert out.returncode == 1, out.stdout
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert committed(kafka_bootstrap, group) == {0: 6, 1: 2, 2: 0, 3: 10}


def test_an_unreachable_broker_is_one_line_within_the_timeout() -> None:
    # The console script in a process of its own: all that reaches the user's stderr (where
    # librdkafka would write its connection failures, hundreds of lines while a broker is
    # away) until the process is gone, and the status the shell sees.
    started = time.monotonic()
    out = streams_process("offsets", "show", "--group", "g",
                          "--bootstrap-server", "127.0.0.1:1", "--timeout", "2")  # fmt: skip
    assert out.returncode == 1
    assert out.stderr.strip() == "error: cannot reach Kafka at 127.0.0.1:1 within 2 s"
    assert time.monotonic() - started < 30


def test_the_consumer_group_protocol_works_for_reset_show_lag_and_replay(
    kafka_bootstrap: str, seeded: Seeded, group: str, make_topic: Callable[..., str]
) -> None:
    kip848 = ("-X", "group.protocol=consumer")
    reset = streams("offsets", "reset", "--group", group, "--topic",
                    seeded.topic, "--to", "-4", "--execute", *kip848,
                    bootstrap=kafka_bootstrap)  # fmt: skip
    assert reset.returncode == 0, reset.stderr
    assert committed(kafka_bootstrap, group) == {0: 2, 1: 0, 2: 0, 3: 6}
    shown = streams(
        "offsets", "show", "--group", group, "--json", *kip848, bootstrap=kafka_bootstrap
    )
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["lag"] == 27
    lag = streams("lag", "--group", group, "--json", *kip848, bootstrap=kafka_bootstrap)
    assert lag.returncode == 0, lag.stderr
    assert [(r["topic"], r["lag"]) for r in json.loads(lag.stdout)] == [(seeded.topic, 27)]
    target = make_topic("target", partitions=4)
    copy = streams("replay", seeded.topic, "--from", "earliest", "--into",
                   target, "--json", "--execute", *kip848, bootstrap=kafka_bootstrap)  # fmt: skip
    assert copy.returncode == 0, copy.stderr
    in_log = sum(len(records) for records in seeded.records.values())
    assert json.loads(copy.stdout)["result"]["copied"] == in_log

    # a member of the group on the consumer protocol is active: a reset is refused
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group,
                         "group.protocol": "consumer", "enable.auto.commit": False})  # fmt: skip
    try:
        consumer.subscribe([seeded.topic])
        deadline = time.monotonic() + 30
        while not consumer.assignment():
            assert time.monotonic() < deadline, "the consumer never joined its group"
            consumer.poll(0.2)
        refused = streams("offsets", "reset", "--group", group, "--topic",
                          seeded.topic, "earliest", "--execute", *kip848,
                          bootstrap=kafka_bootstrap)  # fmt: skip
        assert refused.returncode == 1
        assert "active member" in refused.stderr, refused.stderr
    finally:
        consumer.close()
    assert committed(kafka_bootstrap, group) == {0: 2, 1: 0, 2: 0, 3: 6}


def test_a_setting_the_consumer_protocol_refuses_is_one_line(
    kafka_bootstrap: str, group: str
) -> None:
    out = streams("offsets", "show", "--group", group,
                  "-X", "group.protocol=consumer", "-X", "session.timeout.ms=6000",
                  bootstrap=kafka_bootstrap)  # fmt: skip
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        "error: session.timeout.ms cannot be set with group.protocol=consumer (the broker's "
        "group.consumer.session.timeout.ms sets it); drop it, or use group.protocol=classic"
    ]
