"""`streams broker` on bad situations: clear one-line messages, never a traceback.

These need no Java: every case is decided before a JVM would start.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runner import streams

from streams.broker.local import LocalBroker, free_port
from streams.broker.node import _proc_state, wait_exit

# $KAFKA_BOOTSTRAP_SERVERS names an external cluster, which the commands leave alone: unset
# here (whatever the environment running the suite says) unless a test sets it.
NO_CLUSTER: dict[str, str | None] = {"KAFKA_BOOTSTRAP_SERVERS": None}


@pytest.fixture
def listener() -> Iterator[int]:
    """A port some other program listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_port_taken_is_a_clear_error(listener: int, tmp_path: Path) -> None:
    result = streams(
        "broker", "up", "--port", str(listener), "--data-dir", str(tmp_path / "d"), env=NO_CLUSTER
    )
    assert result.returncode == 1
    assert f"port {listener} is already in use by another process" in result.stderr
    assert "Traceback" not in result.stderr


def test_status_of_a_broker_that_never_ran(tmp_path: Path) -> None:
    port = free_port()
    result = streams(
        "broker", "status", "--port", str(port), "--data-dir", str(tmp_path), env=NO_CLUSTER
    )
    assert result.returncode == 1
    assert "broker is down" in result.stderr


def test_stale_pid_file_is_reported_and_cleared_by_down(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / "broker.pid").write_text(json.dumps({"pid": dead.pid, "started_at": 0}))
    port = str(free_port())
    status = streams(
        "broker", "status", "--port", port, "--data-dir", str(tmp_path), env=NO_CLUSTER
    )
    assert status.returncode == 1
    assert f"stale pid file: process {dead.pid} is gone" in status.stdout
    down = streams("broker", "down", "--port", port, "--data-dir", str(tmp_path), env=NO_CLUSTER)
    assert down.returncode == 0
    assert "no broker running" in down.stdout
    assert not (tmp_path / "broker.pid").exists()


def test_a_pid_reused_by_another_program_is_not_our_broker(tmp_path: Path) -> None:
    # Our own pid is alive but is not a kafka.Kafka with this data dir.
    (tmp_path / "broker.pid").write_text(json.dumps({"pid": os.getpid(), "started_at": 0}))
    status = LocalBroker(port=free_port(), data_dir=tmp_path).status()
    assert not status.running
    assert status.stale_pid == os.getpid()


def test_external_cluster_means_no_local_broker(tmp_path: Path) -> None:
    result = streams(
        "broker", "up", "--data-dir", str(tmp_path), env={"KAFKA_BOOTSTRAP_SERVERS": "kafka:9092"}
    )
    assert result.returncode == 0
    assert "KAFKA_BOOTSTRAP_SERVERS is set (kafka:9092)" in result.stdout
    assert not any(tmp_path.iterdir())


def test_a_process_whose_main_thread_exited_is_still_running_until_its_last_thread_ends() -> None:
    # The JVM at shutdown: its main thread exits first (a zombie in the process table)
    # while other threads, holding the ports, live on. `broker down` must wait for those.
    script = (
        "import ctypes, sys, threading\n"
        "threading.Thread(target=sys.stdin.read).start()\n"
        "ctypes.CDLL(None).pthread_exit(None)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while _proc_state(proc.pid) != "Z":  # the main thread has gone
            assert time.monotonic() < deadline, "the child's main thread never exited"
            time.sleep(0.01)
        assert not wait_exit(proc.pid, 0.2), "a thread of the process still runs"
        assert proc.stdin is not None
        proc.stdin.close()  # the last thread ends
        assert wait_exit(proc.pid, 10)
    finally:
        proc.kill()
        proc.wait()
