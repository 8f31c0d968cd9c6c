"""Ad-hoc use as with kcat, on the broker: ``produce --raw`` (keys, tombstones, headers),
``consume --tail``, ``consume`` outside a project, and ``streams groups``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runner import Run, streams
from confluent_kafka import Consumer

from streams.cluster import Cluster
from streams.schemas import SCHEMAS_DIR_ENV
from streams.testing import TopicFactory


def json_lines(result: Run) -> list[dict[str, Any]]:
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_produce_raw_writes_lines_keys_tombstones_and_headers(
    kafka_bootstrap: str, make_topic: TopicFactory
) -> None:
    topic = make_topic("cli-raw")
    lines = 'k1:hello: world\nk2:\n\nk3:{"not": "an envelope"}\n'
    wrote = streams("produce", topic, "--raw", "-K", ":", "--null",
                    "-H", "trace=abc", "-H", "trace=def", "--json", stdin=lines,
                    bootstrap=kafka_bootstrap)  # fmt: skip
    assert wrote.returncode == 0, wrote.stderr
    assert json.loads(wrote.stdout)["count"] == 3  # the blank line is skipped

    records = json_lines(
        streams("consume", topic, "--format", "raw", "--headers", bootstrap=kafka_bootstrap)
    )
    assert [(r["key"], r["value"]) for r in records] == [
        ("k1", "hello: world"),  # split at the first separator only
        ("k2", None),  # --null: an empty value is a tombstone
        ("k3", '{"not": "an envelope"}'),
    ]
    assert all(r["headers"] == {"trace": ["abc", "def"]} for r in records)

    # without a separator: every line is a value, --key keys them all
    plain = streams(
        "produce", topic, "--raw", "--key", "same", stdin="a\nb\n", bootstrap=kafka_bootstrap
    )
    assert plain.returncode == 0, plain.stderr
    tail = json_lines(
        streams("consume", topic, "--format", "raw", "--tail", "2", bootstrap=kafka_bootstrap)
    )
    assert [(r["key"], r["value"]) for r in tail] == [("same", "a"), ("same", "b")]

    # a line without the separator stops it, naming the line; the lines before are written
    broken = streams(
        "produce", topic, "--raw", "-K", "=", stdin="x=1\ny\n", bootstrap=kafka_bootstrap
    )
    assert broken.returncode == 1
    assert broken.stderr.strip() == (
        f"error: line 2: no key separator '=' (1 record was already written to {topic})"
    )


def test_tail_reads_the_last_records_of_each_partition(
    kafka_bootstrap: str, make_topic: TopicFactory
) -> None:
    topic = make_topic("cli-tail", partitions=3)
    lines = "".join(f"k{i % 6}:{i}\n" for i in range(12))
    assert (
        streams(
            "produce", topic, "--raw", "-K", ":", stdin=lines, bootstrap=kafka_bootstrap
        ).returncode
        == 0
    )
    everything = json_lines(streams("consume", topic, "--format", "raw", bootstrap=kafka_bootstrap))
    by_partition: dict[int, list[str]] = {}
    for r in everything:
        by_partition.setdefault(r["partition"], []).append(r["value"])
    assert len(by_partition) >= 2, "six keys land on more than one partition"

    tail = json_lines(
        streams("consume", topic, "--format", "raw", "--tail", "3", bootstrap=kafka_bootstrap)
    )
    for partition, values in by_partition.items():
        assert [r["value"] for r in tail if r["partition"] == partition] == values[-3:]
    more = json_lines(
        streams("consume", topic, "--format", "raw", "--tail", "99", bootstrap=kafka_bootstrap)
    )
    assert len(more) == 12  # never before the start of the log

    both = streams("consume", topic, "--tail", "3", "--from", "0", bootstrap=kafka_bootstrap)
    assert both.returncode == 1 and "drop --from" in both.stderr


def test_consume_outside_a_project_decodes_what_it_can_and_shows_the_rest(
    kafka_bootstrap: str, make_topic: TopicFactory, tmp_path: Path
) -> None:
    topic = make_topic("cli-no-project")
    # a type the examples know, and one only a project of the user's knows
    mine = tmp_path / "mine" / "schemas"
    (mine / "thing.made").mkdir(parents=True)
    (mine / "thing.made" / "v1.avsc").write_text(json.dumps(
        {"type": "record", "name": "ThingMade", "fields": [{"name": "n", "type": "long"}]}
    ))  # fmt: skip
    order = {
        "order_id": "o-1",
        "customer_id": "c-1",
        "items": [{"sku": "s", "quantity": 1, "unit_price_cents": 5}],
        "total_cents": 5,
    }
    for args, line in (
        (("--type", "order.placed@2"), json.dumps(order)),
        (("--type", "thing.made@1", "--schemas", str(mine)), '{"n": 7}'),
        (("--raw",), "plain text"),
    ):
        wrote = streams("produce", topic, *args, stdin=line, bootstrap=kafka_bootstrap)
        assert wrote.returncode == 0, wrote.stderr

    elsewhere = tmp_path / "elsewhere"  # no schemas/ here nor above
    elsewhere.mkdir()
    unset: dict[str, str | None] = {SCHEMAS_DIR_ENV: None}  # nor named in the environment

    def consume(*args: str) -> Run:
        return streams("consume", topic, *args, cwd=elsewhere, env=unset, bootstrap=kafka_bootstrap)

    result = consume("--headers")
    placed, thing, text = json_lines(result)
    assert "no schemas folder here" in result.stderr
    assert placed["type"] == "order.placed" and placed["data"]["order_id"] == "o-1"
    # an envelope without a schema here: its metadata, headers and payload as they are
    assert (thing["type"], thing["version"], thing["source"]) == ("thing.made", 1, "streams-cli")
    assert thing["headers"]["ce_type"] == "thing.made" and thing["data_base64"]
    assert "thing.made" in thing["error"]
    assert text["value"] == "plain text" and "not a Streams envelope" in text["error"]

    table = consume("--format", "table")
    assert table.returncode == 0, table.stderr
    assert "thing.made@1" in table.stdout and "(not an envelope)" in table.stdout


@pytest.fixture
def group(kafka_bootstrap: str, make_topic: TopicFactory) -> Iterator[tuple[str, str]]:
    """A group with commits on a fresh topic of 2 partitions, none of its members up."""
    topic = make_topic("cli-groups", partitions=2)
    wrote = streams(
        "produce", topic, "--raw", "-K", ":", stdin="a:1\nb:2\nc:3\n", bootstrap=kafka_bootstrap
    )
    assert wrote.returncode == 0, wrote.stderr
    name = f"g-{topic}"
    Cluster(kafka_bootstrap).alter_committed(name, {(topic, 0): 0, (topic, 1): 0})
    yield name, topic


def test_groups_list_describe_and_delete(kafka_bootstrap: str, group: tuple[str, str]) -> None:
    name, topic = group
    listed = json.loads(streams("groups", "list", "--json", bootstrap=kafka_bootstrap).stdout)
    assert {"group": name, "state": "Empty", "members": 0} in listed

    member = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": name,
                       "enable.auto.commit": False})  # fmt: skip
    try:
        member.subscribe([topic])
        deadline = time.monotonic() + 30
        while not member.assignment():
            assert time.monotonic() < deadline, "the consumer never joined its group"
            member.poll(0.2)
        described = json.loads(
            streams("groups", "describe", name, "--json", bootstrap=kafka_bootstrap).stdout
        )
        assert described["state"] == "Stable"
        (joined,) = described["members"]
        assert sorted(joined["partitions"]) == [f"{topic}:0", f"{topic}:1"]
        assert [(r["topic"], r["lag"]) for r in described["lag"]] == [(topic, 3)]
        shown = streams("groups", "describe", name, bootstrap=kafka_bootstrap)
        assert shown.returncode == 0 and name in shown.stdout and topic in shown.stdout

        # a group in use is refused in one line, and stays
        refused = streams("groups", "delete", name, "--execute", bootstrap=kafka_bootstrap)
        assert refused.returncode == 1
        assert refused.stderr.strip().splitlines() == [
            f"error: group {name!r} is in use (Stable, 1 member): stop its consumers first; "
            "nothing was deleted"
        ]
    finally:
        member.close()

    # without --execute: a dry run that says what it would delete, and the group stays
    dry = streams("groups", "delete", name, bootstrap=kafka_bootstrap)
    assert dry.returncode == 0, dry.stderr
    assert "would delete group" in " ".join(dry.stdout.split())
    assert name in Cluster(kafka_bootstrap).groups()
    deleted = streams("groups", "delete", name, "--execute", "--json", bootstrap=kafka_bootstrap)
    assert deleted.returncode == 0, deleted.stderr
    assert json.loads(deleted.stdout) == {"deleted": [name], "executed": True}
    assert name not in Cluster(kafka_bootstrap).groups()
    again = streams("groups", "delete", name, "--execute", bootstrap=kafka_bootstrap)
    assert again.returncode == 1 and f"no consumer group {name!r}" in again.stderr
