"""``streams topics``: create, describe, list and delete a topic as a user would, on the broker."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from cli_runner import Run, streams
from confluent_kafka.admin import AdminClient

from streams.cluster import Cluster, delete_topics
from streams.testing.topics import unique_topic_name


@pytest.fixture
def topic_name(kafka_admin: AdminClient) -> Iterator[str]:
    """A fresh topic name; the topic is deleted after the test if it still exists."""
    name = unique_topic_name("cli-topics")
    yield name
    delete_topics(kafka_admin, [name])


def one_error_line(result: Run) -> str:
    assert result.returncode == 1, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def test_create_describe_list_delete_round_trip(
    kafka_bootstrap: str, kafka_admin: AdminClient, topic_name: str
) -> None:
    created = streams(
        "topics",
        "create",
        topic_name,
        "-p",
        "3",
        "--topic-config",
        "retention.ms=3600000",
        "--topic-config",
        "cleanup.policy=compact",
        bootstrap=kafka_bootstrap,
    )
    assert created.returncode == 0, created.stderr
    assert f"created topic {topic_name}" in created.stdout

    described = streams("topics", "describe", topic_name, "--json", bootstrap=kafka_bootstrap)
    assert described.returncode == 0, described.stderr
    info = json.loads(described.stdout)
    assert [p["partition"] for p in info["partitions"]] == [0, 1, 2]
    assert all(p["leader"] >= 0 and p["isr"] == p["replicas"] for p in info["partitions"])
    assert info["records"] == 0
    assert info["configs"]["retention.ms"] == {"value": "3600000", "source": "topic"}
    assert info["configs"]["cleanup.policy"] == {"value": "compact", "source": "topic"}

    # An internal topic for --all to show (and the plain list to hide): the broker makes
    # __consumer_offsets at a group's first commit, so the test does not rely on another's.
    Cluster(kafka_bootstrap).alter_committed(f"{topic_name}-group", {(topic_name, 0): 0})
    listed = streams("topics", "list", "--json", bootstrap=kafka_bootstrap)
    assert listed.returncode == 0, listed.stderr
    rows = {r["topic"]: r for r in json.loads(listed.stdout)}
    assert rows[topic_name]["partitions"] == 3
    assert rows[topic_name]["replication_factor"] == 1
    assert not any(name.startswith("__") for name in rows)  # internal ones only with --all
    everything = json.loads(
        streams("topics", "list", "--all", "--json", bootstrap=kafka_bootstrap).stdout
    )
    assert "__consumer_offsets" in {r["topic"] for r in everything}

    # without --execute: a dry run that says what it would delete, and the topic stays
    dry = streams("topics", "delete", topic_name, bootstrap=kafka_bootstrap)
    assert dry.returncode == 0, dry.stderr
    said = " ".join(dry.stdout.split())  # as one line of words, however it wrapped
    assert f"would delete {topic_name}" in said and "pass --execute" in said
    assert topic_name in kafka_admin.list_topics(timeout=10).topics

    deleted = streams("topics", "delete", topic_name, "--execute", bootstrap=kafka_bootstrap)
    assert deleted.returncode == 0, deleted.stderr
    assert topic_name not in kafka_admin.list_topics(timeout=10).topics
    again = streams("topics", "delete", topic_name, bootstrap=kafka_bootstrap)
    assert "does not exist" in one_error_line(again)
    skipped = streams(
        "topics", "delete", topic_name, "--yes", "--if-exists", bootstrap=kafka_bootstrap
    )  # --yes: the old name
    assert skipped.returncode == 0, skipped.stderr


def test_creating_an_existing_topic_is_one_error_line_unless_if_not_exists(
    kafka_bootstrap: str, topic_name: str
) -> None:
    assert streams("topics", "create", topic_name, bootstrap=kafka_bootstrap).returncode == 0
    again = streams("topics", "create", topic_name, "-p", "4", bootstrap=kafka_bootstrap)
    assert f"topic '{topic_name}' already exists" in one_error_line(again)
    accepted = streams(
        "topics", "create", topic_name, "-p", "4", "--if-not-exists", bootstrap=kafka_bootstrap
    )
    assert accepted.returncode == 0, accepted.stderr
    assert "exists already" in accepted.stdout
    info = json.loads(
        streams("topics", "describe", topic_name, "--json", bootstrap=kafka_bootstrap).stdout
    )
    assert len(info["partitions"]) == 1  # left as it was


def test_a_refused_creation_and_a_missing_topic_are_one_error_line(
    kafka_bootstrap: str, topic_name: str
) -> None:
    too_many = streams("topics", "create", topic_name, "-r", "3", bootstrap=kafka_bootstrap)
    assert "replication factor" in one_error_line(too_many)
    unknown = streams(
        "topics", "create", topic_name, "--topic-config", "nope=1", bootstrap=kafka_bootstrap
    )
    assert "nope" in one_error_line(unknown)
    missing = streams("topics", "describe", topic_name, bootstrap=kafka_bootstrap)
    assert "does not exist" in one_error_line(missing)


def test_a_broker_that_does_not_answer_is_one_error_line() -> None:
    # port 1: nothing listens there
    result = streams("topics", "list", "--timeout", "1", bootstrap="127.0.0.1:1")
    assert "cannot reach Kafka at 127.0.0.1:1" in one_error_line(result)
