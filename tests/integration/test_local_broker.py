"""The local broker's whole life, driven through the `streams broker` command.

A broker of its own (free port, temporary data dir) so the session broker is untouched;
one for the whole life, as each start is a JVM's (and a fresh data dir a format's too).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
from cli_runner import Run, streams_process
from confluent_kafka import Consumer, Producer

from streams.broker import LocalBroker, free_port
from streams.broker.node import _alive, port_in_use, wait_exit
from streams.cluster import admin_client, create_topic

pytestmark = pytest.mark.integration


def streams(*args: str) -> Run:
    """``streams ARGS`` in a process of its own, as a user runs it: the broker it starts outlives it
    (started from this process, a killed one would linger as its zombie child). Without
    ``$KAFKA_BOOTSTRAP_SERVERS``: set, it names a cluster the commands leave alone."""
    return streams_process(*args, env={"KAFKA_BOOTSTRAP_SERVERS": None}, timeout=180)


def kafka_pids(data_dir: Path, before: Sequence[int] = ()) -> list[int]:
    """Every live kafka.Kafka process started with this data dir's config, and every pid of
    ``before`` that still has a running thread (a JVM whose main thread has exited has an
    empty command line, and its other threads may still hold the port)."""
    config = str(data_dir / "server.properties").encode()
    pids = [pid for pid in before if _alive(pid)]
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) in pids:
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"kafka.Kafka" in cmdline and config in cmdline and _alive(int(proc.name)):
            pids.append(int(proc.name))
    return pids


def kcat() -> str:
    found = shutil.which("kcat")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("kcat is missing: .ci/run installs Debian's kcat")
        pytest.skip("kcat (Debian package kcat) is not installed")
    return found


def round_trip(bootstrap: str, topic: str, count: int = 200) -> int:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(count):
        producer.produce(topic, key=str(i % 7), value=str(i))
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    seen = 0
    for _ in range(60):
        seen += sum(1 for m in consumer.consume(1000, timeout=1.0) if m.error() is None)
        if seen >= count:
            break
    consumer.close()
    return seen


def test_up_is_idempotent_kill_is_detected_up_recovers_and_data_lasts_until_fresh(
    tmp_path: Path,
) -> None:
    port = str(free_port())
    data = tmp_path / "broker"
    where = ["--port", port, "--data-dir", str(data)]
    bootstrap = f"127.0.0.1:{port}"

    first = streams("broker", "up", *where)
    assert first.returncode == 0, first.stderr
    assert re.search(rf"broker up at {bootstrap} \(Apache Kafka 4\.\d+\.\d+, pid \d+", first.stdout)
    [pid] = kafka_pids(data)
    started = [pid]

    try:
        second = streams("broker", "up", *where)
        assert second.returncode == 0, second.stderr
        assert f"broker already running at {bootstrap} (pid {pid})" in second.stdout
        assert kafka_pids(data) == [pid], "a second `up` must never start a second broker"

        # A client we did not write sees the broker.
        listing = subprocess.run(
            [kcat(), "-b", bootstrap, "-L", "-m", "10"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert listing.returncode == 0, listing.stderr
        assert f"broker 1 at 127.0.0.1:{port}" in listing.stdout

        status = streams("broker", "status", *where)
        assert status.returncode == 0
        assert f"pid {pid}" in status.stdout and "Apache Kafka 4." in status.stdout
        # Found by its port alone, though it keeps its data outside the default place.
        by_port = streams("broker", "status", "--port", port)
        assert by_port.returncode == 0, by_port.stderr
        assert f"pid {pid}" in by_port.stdout and f"data dir  {data}" in by_port.stdout

        os.kill(pid, signal.SIGKILL)
        assert wait_exit(pid, 30)
        down = streams("broker", "status", *where)
        assert down.returncode == 1
        assert "broker is down" in down.stderr
        assert f"stale pid file: process {pid} is gone" in down.stdout

        again = streams("broker", "up", *where)
        assert again.returncode == 0, again.stderr
        [new_pid] = kafka_pids(data)
        started.append(new_pid)
        assert new_pid != pid
        create_topic(admin_client(bootstrap), "after-recovery", partitions=2)
        assert round_trip(bootstrap, "after-recovery") == 200
    finally:
        stop = streams("broker", "down", *where)
    assert stop.returncode == 0
    assert f"broker at {bootstrap} stopped" in stop.stdout
    # "stopped" means gone: no thread of the JVM left, the port free, the moment it says so.
    assert kafka_pids(data, started) == []
    assert not port_in_use(int(port)), "the port must be free after `down`"

    # What the broker held outlives a clean stop; `up(fresh=True)` wipes it.
    broker = LocalBroker(port=int(port), data_dir=data)
    try:
        broker.up()
        assert "after-recovery" in admin_client(bootstrap).list_topics(timeout=10).topics
        broker.down()
        broker.up(fresh=True)
        assert "after-recovery" not in admin_client(bootstrap).list_topics(timeout=10).topics
    finally:
        broker.down()
