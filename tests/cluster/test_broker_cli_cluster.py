"""`streams broker up --nodes 3`, `status`, the node drills (`down --node ID --kill`, ...)
and `down`, through the command: a cluster of its own on free ports, so the session's
cluster is untouched."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from cli_runner import Run, streams_process

from streams.broker.node import port_in_use

pytestmark = pytest.mark.cluster


def streams(*args: str) -> Run:
    """``streams ARGS`` in a process of its own, as a user runs it: the nodes it starts outlive it
    (started from this process, a killed one would linger as its zombie child). Without
    ``$KAFKA_BOOTSTRAP_SERVERS``: set, it names a cluster the commands leave alone."""
    return streams_process(*args, env={"KAFKA_BOOTSTRAP_SERVERS": None}, timeout=240)


def three_free_ports() -> int:
    """A port such that it and the next two are free (below the kernel's ephemeral range,
    where the controller ports are picked)."""
    for _ in range(100):
        base = random.randrange(20000, 32000)
        if not any(port_in_use(base + i) for i in range(3)):
            return base
    raise AssertionError("no three consecutive free ports")


def node_states(where: list[str]) -> dict[int, str]:
    result = streams("broker", "status", "--json", *where)
    return {node["id"]: node["state"] for node in json.loads(result.stdout)["nodes"]}


def test_up_status_drills_and_down(tmp_path: Path) -> None:
    port = three_free_ports()
    where = ["--port", str(port), "--data-dir", str(tmp_path / "cluster")]
    bootstrap = ",".join(f"127.0.0.1:{port + i}" for i in range(3))

    up = streams("broker", "up", "--nodes", "3", *where)
    assert up.returncode == 0, up.stderr
    assert f"3-node cluster up at {bootstrap}" in up.stdout
    try:
        again = streams("broker", "up", *where)  # the size is found in the data dir
        assert f"3-node cluster already running at {bootstrap}" in again.stdout

        status = streams("broker", "status", *where)
        assert status.returncode == 0, status.stderr
        assert "3 nodes: 3 running" in status.stdout
        for i in range(3):
            assert f"127.0.0.1:{port + i}" in status.stdout

        kill = streams("broker", "down", "--node", "2", "--kill", *where)
        assert kill.stdout == "node 2 killed\n", kill.stderr
        pause = streams("broker", "down", "--node", "3", "--pause", *where)
        assert pause.stdout == "node 3 paused\n", pause.stderr
        assert node_states(where) == {1: "running", 2: "down", 3: "paused"}
        degraded = streams("broker", "status", *where)
        assert (
            degraded.returncode == 0 and "3 nodes: 1 running, 1 down, 1 paused" in degraded.stdout
        )

        started = streams("broker", "up", "--node", "2", *where)
        assert f"node 2 up at 127.0.0.1:{port + 1}" in started.stdout, started.stderr
        whole = streams("broker", "up", *where)
        assert "(continued paused node 3)" in whole.stdout, whole.stderr
        assert node_states(where) == {1: "running", 2: "running", 3: "running"}
        stop = streams("broker", "down", "--node", "1", *where)
        assert stop.stdout == "node 1 stopped\n", stop.stderr
        assert node_states(where) == {1: "down", 2: "running", 3: "running"}

        bad = streams("broker", "down", "--node", "4", *where)
        assert bad.returncode == 1
        assert bad.stderr.strip() == "error: no node 4: the cluster's nodes are 1 to 3"
        both = streams("broker", "down", "--kill", *where)
        assert both.stderr.strip() == "error: --kill and --pause act on one node: give --node ID"
    finally:
        down = streams("broker", "down", *where)
    assert down.returncode == 0
    assert f"cluster at {bootstrap} stopped" in down.stdout
    assert node_states(where) == {1: "down", 2: "down", 3: "down"}
    assert streams("broker", "status", *where).returncode == 1
    assert not any(port_in_use(port + i) for i in range(3))
