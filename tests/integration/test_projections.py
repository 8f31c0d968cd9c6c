"""An event-sourced projection on a real broker: ``topology/accounts.py`` run by two
instances with query ports, read key by key from outside (``streams query``, and the
function behind it) against a brute-force fold of the event log; then rebuilt under a new
fold while the running app goes on answering, and switched to once caught up."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runner import streams

from streams.cluster import Cluster
from streams.envelope import Envelope
from streams.examples import example_path
from streams.patterns.projections import caught_up, current_app, pointer_topic
from streams.patterns.queries import query
from streams.testing import KafkaIO, TopicFactory, TopologyProcess, wait_until
from streams.topology import load_topology
from streams.topology.loader import import_file

ACCOUNTS_FILE = example_path("accounts")
ACCOUNTS = import_file(ACCOUNTS_FILE)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def events(kafka_io: KafkaIO, make_topic: TopicFactory) -> tuple[str, list[Envelope]]:
    topic = make_topic(partitions=4)
    return topic, kafka_io.produce(topic, ACCOUNTS.sample_events(1_500, accounts=40))


@pytest.fixture
def instances(
    kafka_bootstrap: str, app_id: str, events: tuple[str, list[Envelope]]
) -> Iterator[list[TopologyProcess]]:
    topic, _ = events
    procs = [
        TopologyProcess(
            ACCOUNTS_FILE,
            kafka_bootstrap,
            app_id=app_id,
            settings={"input": topic},
            args=["--query-port", "0"],
        ).start()
        for _ in range(2)
    ]
    try:
        for proc in procs:
            proc.wait_started(assigned=True)
        yield procs
    finally:
        for proc in procs:
            proc.close()


def _all(cluster: Cluster, app: str, keys: list[str]) -> dict[str, Any]:
    return {key: query(cluster, app, "balances", key, timeout=30) for key in keys}


def test_two_instances_answer_every_key_as_the_fold_of_its_events(
    kafka_bootstrap: str,
    app_id: str,
    events: tuple[str, list[Envelope]],
    instances: list[TopologyProcess],
) -> None:
    topic, sent = events
    cluster = Cluster(kafka_bootstrap, 10)
    topology = load_topology(ACCOUNTS_FILE, app_id=app_id, params={"input": topic})
    wait_until(lambda: caught_up(cluster, topology), timeout=120, what="the projection")

    def both_own_keys() -> bool:  # the second instance's share comes in a second round
        members = cluster.describe_group(app_id).members
        return len(members) == 2 and all(m.partitions for m in members)

    wait_until(both_own_keys, timeout=60, what="both instances owning partitions")
    expected = ACCOUNTS.replayed(sent)
    assert _all(cluster, app_id, sorted(expected)) == expected
    # The command: one line of JSON, from whichever instance owns the key.
    some = sorted(expected)[:3]
    for key in some:
        shown = streams("query", app_id, "balances", key, bootstrap=kafka_bootstrap)
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout) == expected[key]
    missing = streams("query", app_id, "balances", "a-none", bootstrap=kafka_bootstrap)
    assert missing.returncode == 1
    assert missing.stderr.strip().endswith(f"balances of {app_id} has no value for 'a-none'")
    unknown = streams("query", app_id, "nope", "a-0001", bootstrap=kafka_bootstrap)
    assert unknown.returncode == 1
    assert "has no table 'nope' (tables: ['balances'])" in unknown.stderr
    assert len(unknown.stderr.strip().splitlines()) == 1


def test_a_rebuild_answers_with_the_old_fold_until_the_new_one_caught_up(
    kafka_bootstrap: str,
    app_id: str,
    events: tuple[str, list[Envelope]],
    instances: list[TopologyProcess],
) -> None:
    topic, sent = events
    cluster = Cluster(kafka_bootstrap, 10)
    old = load_topology(ACCOUNTS_FILE, app_id=app_id, params={"input": topic})
    wait_until(lambda: caught_up(cluster, old), timeout=120, what="the projection")
    before, after = ACCOUNTS.replayed(sent), ACCOUNTS.replayed(sent, 25)
    assert before != after  # the fee changes what the fold gives
    keys = sorted(before)
    rebuild = ["--name", app_id, "--set", f"input={topic}", "--set", "fee_cents=25"]
    planned = streams(
        "projections",
        "rebuild",
        str(ACCOUNTS_FILE),
        *rebuild,
        "--json",
        bootstrap=kafka_bootstrap,
    )
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert plan == {
        "projection": app_id,
        "current_app": app_id,
        "new_app": f"{app_id}-g2",
        "inputs": {topic: len(sent)},
        "tables": ["balances"],
    }
    assert pointer_topic(app_id) not in cluster.topics()  # a dry run changes nothing
    with TopologyProcess(
        ACCOUNTS_FILE,
        kafka_bootstrap,
        settings={"input": topic, "fee_cents": "25"},
        args=["--name", app_id, "--query-port", "0", "--execute"],
        command=("projections", "rebuild"),
    ) as rebuilding:
        answered = 0
        while current_app(cluster, app_id) == app_id:  # the old app answers meanwhile
            rebuilding.check()
            key = keys[answered % len(keys)]
            assert query(cluster, app_id, "balances", key, timeout=30) == before[key]
            answered += 1
        assert answered > 0
        assert current_app(cluster, app_id) == f"{app_id}-g2"
        assert _all(cluster, current_app(cluster, app_id), keys) == after
        shown = streams("query", app_id, "balances", keys[0], bootstrap=kafka_bootstrap)
        assert json.loads(shown.stdout) == after[keys[0]]
