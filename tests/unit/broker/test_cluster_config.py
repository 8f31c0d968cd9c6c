"""What a local cluster's nodes are told: one static quorum, their own ports and folders,
and replication defaults that follow the cluster's size. No Java needed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from streams.broker import FAST_FAILOVER, QUICK_START_JVM, LocalCluster, LocalNode, NodeState
from streams.broker.cluster import stored_size
from streams.broker.node import free_ports, quorum_voters, replication_defaults
from streams.errors import BrokerError


def test_three_nodes_share_one_static_quorum_and_keep_their_own_ports(tmp_path: Path) -> None:
    cluster = LocalCluster(3, port=19092, data_dir=tmp_path)
    controllers = {1: 29001, 2: 29002, 3: 29003}
    props = [node.properties(controllers) for node in cluster.nodes]

    voters = "1@127.0.0.1:29001,2@127.0.0.1:29002,3@127.0.0.1:29003"
    assert {p["controller.quorum.voters"] for p in props} == {voters}
    assert [p["node.id"] for p in props] == ["1", "2", "3"]
    assert [p["process.roles"] for p in props] == ["broker,controller"] * 3
    assert props[1]["listeners"] == "PLAINTEXT://127.0.0.1:19093,CONTROLLER://127.0.0.1:29002"
    assert props[1]["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19093"
    assert props[2]["log.dirs"] == str(tmp_path / "node-3" / "kraft")
    assert cluster.bootstrap == "127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094"
    assert cluster.node_bootstrap(3) == "127.0.0.1:19094"


def test_a_three_node_cluster_keeps_three_copies_and_needs_two_in_sync(tmp_path: Path) -> None:
    props = LocalCluster(3, data_dir=tmp_path).nodes[0].properties({1: 1, 2: 2, 3: 3})
    assert props["default.replication.factor"] == "3"
    assert props["min.insync.replicas"] == "2"
    assert props["offsets.topic.replication.factor"] == "3"
    assert props["transaction.state.log.replication.factor"] == "3"
    assert props["transaction.state.log.min.isr"] == "2"
    assert props["share.coordinator.state.topic.replication.factor"] == "3"
    assert props["share.coordinator.state.topic.min.isr"] == "2"
    # What the single broker always set stays.
    assert props["auto.create.topics.enable"] == "false"
    assert props["log.segment.delete.delay.ms"] == "1000"


def test_a_single_node_keeps_one_copy(tmp_path: Path) -> None:
    props = LocalNode(1, tmp_path, 9092, heap="1g").properties({1: 9093})
    assert props["controller.quorum.voters"] == "1@127.0.0.1:9093"
    assert props["default.replication.factor"] == "1"
    assert props["min.insync.replicas"] == "1"
    assert props["transaction.state.log.min.isr"] == "1"


def test_properties_given_to_a_cluster_are_every_node_s_over_the_generated_ones(
    tmp_path: Path,
) -> None:
    controllers = {1: 29001, 2: 29002, 3: 29003}
    plain = LocalCluster(3, data_dir=tmp_path / "plain").nodes[0].properties(controllers)
    given = {**FAST_FAILOVER, "min.insync.replicas": "3"}
    cluster = LocalCluster(3, data_dir=tmp_path / "fast", overrides=given)
    for node in cluster.nodes:
        props = node.properties(controllers)
        assert {k: props[k] for k in given} == given  # a generated one too: theirs wins
        assert props["node.id"] == str(node.node_id)  # the rest is generated as before
    # Without them, Kafka's own liveness timeouts: nothing sets them.
    assert not FAST_FAILOVER.keys() & plain.keys()
    assert plain["min.insync.replicas"] == "2"


def test_java_options_given_to_a_cluster_reach_each_node_s_jvm_and_its_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    launched: list[list[str]] = []

    def popen(cmd: list[str], **_: object) -> SimpleNamespace:
        launched.append(cmd)
        return SimpleNamespace(pid=4242)

    monkeypatch.setattr(subprocess, "Popen", popen)
    java, libs, controllers = Path("/jdk/bin/java"), Path("/libs"), {1: 1, 2: 2, 3: 3}
    node = LocalCluster(3, data_dir=tmp_path, java_options=QUICK_START_JVM).nodes[1]
    node.launch(java, libs, controllers)
    for cmd in (node.format_command(java, libs, "cluster-id"), launched[0]):
        main = next(i for i, arg in enumerate(cmd) if arg.startswith("kafka."))
        assert set(QUICK_START_JVM) <= set(cmd[:main])  # JVM options: before the main class
    plain = LocalCluster(3, data_dir=tmp_path / "plain").nodes[1]
    plain.write_config(controllers)  # as formatting does first
    assert not set(QUICK_START_JVM) & set(plain.format_command(java, libs, "cluster-id"))


def test_fast_failover_notices_a_lost_node_within_seconds() -> None:
    session = int(FAST_FAILOVER["broker.session.timeout.ms"])
    heartbeat = int(FAST_FAILOVER["broker.heartbeat.interval.ms"])
    assert session < 9_000 and int(FAST_FAILOVER["replica.lag.time.max.ms"]) < 30_000
    assert session >= 5 * heartbeat  # several heartbeats late before a busy node is fenced
    assert "unclean.leader.election.enable" not in FAST_FAILOVER


@pytest.mark.parametrize(
    ("size", "factor", "min_isr"), [(1, 1, 1), (2, 2, 2), (3, 3, 2), (5, 3, 2)]
)
def test_replication_defaults_follow_the_size(size: int, factor: int, min_isr: int) -> None:
    defaults = replication_defaults(size)
    assert defaults["default.replication.factor"] == str(factor)
    assert defaults["offsets.topic.replication.factor"] == str(factor)
    assert defaults["min.insync.replicas"] == str(min_isr)


def test_quorum_voters_are_in_node_order() -> None:
    assert quorum_voters({2: 7002, 1: 7001}) == "1@127.0.0.1:7001,2@127.0.0.1:7002"


def test_each_node_has_a_folder_of_its_own(tmp_path: Path) -> None:
    cluster = LocalCluster(3, data_dir=tmp_path)
    assert [n.data_dir for n in cluster.nodes] == [tmp_path / f"node-{i}" for i in (1, 2, 3)]
    assert cluster.nodes[0].pid_file == tmp_path / "node-1" / "broker.pid"


def test_bad_shapes_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(BrokerError, match="at least one node"):
        LocalCluster(0, data_dir=tmp_path)
    with pytest.raises(BrokerError, match="3 nodes need 3 ports, not 2"):
        LocalCluster(3, data_dir=tmp_path, ports=[1, 2])
    with pytest.raises(BrokerError, match="no node 4: the cluster's nodes are 1 to 3"):
        LocalCluster(3, data_dir=tmp_path).kill(4)


def test_a_cluster_that_never_ran_is_down_and_a_dead_pid_is_stale(tmp_path: Path) -> None:
    cluster = LocalCluster(3, port=free_ports(1)[0], data_dir=tmp_path)
    (tmp_path / "node-2").mkdir()
    (tmp_path / "node-2" / "broker.pid").write_text(
        json.dumps({"pid": os.getpid(), "started_at": 0})  # alive, but not a kafka.Kafka
    )
    status = cluster.status()
    assert [n.state for n in status.nodes] == [NodeState.DOWN] * 3
    assert status.nodes[1].stale_pid == os.getpid()
    assert not status.alive and not status.running
    assert cluster.kill(1) is False and cluster.pause(2) is False
    assert cluster.down() is False


def test_stored_size_reads_the_cluster_metadata(tmp_path: Path) -> None:
    assert stored_size(tmp_path) is None
    (tmp_path / "cluster.json").write_text(
        json.dumps({"cluster_id": "x", "controller_ports": {"1": 1, "2": 2, "3": 3}})
    )
    assert stored_size(tmp_path) == 3


def test_free_ports_are_distinct() -> None:
    ports = free_ports(5)
    assert len(set(ports)) == 5
