"""Replicas of the topics Streams creates, on the one-node broker: the cluster's default
unless asked, a count the cluster cannot give refused in one line, an existing topic with
fewer replicas than asked named in one WARNING. (The three-node cluster's RF 3 is proven
in tests/cluster.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import streams
from confluent_kafka.admin import AdminClient
from structlog.testing import capture_logs

from streams.cluster import TopicError, Topics, default_replication_factor
from streams.testing import TopicFactory
from streams.testing.topics import unique_topic_name

ORDERS = Path(__file__).resolve().parents[2] / "topology" / "orders.py"


def replicas(admin: AdminClient, topic: str) -> set[int]:
    partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions.values()
    return {len(p.replicas) for p in partitions}


def test_a_created_topic_takes_the_cluster_default(
    kafka_admin: AdminClient, make_topic: TopicFactory
) -> None:
    topics = Topics(kafka_admin)
    name = unique_topic_name("rf-default")
    make_topic.created.append(name)
    assert topics.ensure(name, 3)
    assert replicas(kafka_admin, name) == {default_replication_factor(kafka_admin)}
    assert not topics.ensure(name, 3)  # there already: kept


def test_more_replicas_than_brokers_is_refused_with_the_reason(kafka_admin: AdminClient) -> None:
    brokers = len(kafka_admin.list_topics(timeout=10).brokers)
    name = unique_topic_name("rf-too-many")
    with pytest.raises(TopicError, match="replication factor"):
        Topics(kafka_admin, replication_factor=brokers + 1).ensure(name, 1)
    assert name not in kafka_admin.list_topics(timeout=10).topics


def test_an_existing_topic_with_fewer_replicas_gets_one_warning(
    kafka_admin: AdminClient, make_topic: TopicFactory
) -> None:
    existing = make_topic(partitions=2)  # the one broker's default: one replica
    asked = len(kafka_admin.list_topics(timeout=10).brokers) + 1
    topics = Topics(kafka_admin, replication_factor=asked)
    with capture_logs() as logs:
        assert not topics.ensure(existing, 2)
        assert not topics.ensure(existing, 2)
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert len(warnings) == 1
    assert warnings[0]["topic"] == existing
    assert (warnings[0]["replicas"], warnings[0]["replication_factor"]) == (1, asked)


def test_run_with_more_replicas_than_brokers_fails_in_one_line_and_creates_nothing(
    kafka_bootstrap: str, kafka_admin: AdminClient, make_topic: TopicFactory
) -> None:
    source = make_topic(partitions=1)
    app = unique_topic_name("rf-run")
    brokers = len(kafka_admin.list_topics(timeout=10).brokers)
    result = streams(
        *("run", str(ORDERS), "--no-status", "--app-id", app, "--set", f"input={source}"),
        *("--replication-factor", str(brokers + 1)),
        bootstrap=kafka_bootstrap,
    )
    err = result.stderr
    assert result.returncode == 1, err
    assert "replication factor" in err.lower()
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert not [t for t in kafka_admin.list_topics(timeout=10).topics if t.startswith(f"{app}-")]
