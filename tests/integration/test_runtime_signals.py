"""Stopping `streams run`: one signal finishes the record in hand and commits it; a second
signal exits at once and commits nothing more."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition
from factories import order

from streams.codec import AvroCodec
from streams.schemas import default_catalog
from streams.testing import TopicFactory, produce_envelopes, wait_until
from streams.testing.topics import unique_topic_name

# A topology whose step blocks until the test releases it: the test then knows a record is
# in hand when it sends its signals (no timing guesses).
SLOW = """
import os, time
from pathlib import Path
from streams.topology import TopologyBuilder, owned

GATE = Path(os.environ["GATE_DIR"])

def hold(env):
    (GATE / f"started-{env.data['order_id']}").touch()
    while not (GATE / "release").exists():
        time.sleep(0.01)  # the workload: waits for the test's release file
    return env

def build(app_id="slow", input="in"):
    b = TopologyBuilder(app_id)
    b.source(input, type="order.placed", version=2).map(hold).to(
        owned("out"), type="order.placed", version=2)
    return b.build()
"""


def committed(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        (tp,) = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        return int(tp.offset)
    finally:
        consumer.close()


def start(gate: Path, bootstrap: str, source: str) -> tuple[subprocess.Popen[bytes], str]:
    """`streams run` of the slow topology under a new app id, gated by files in ``gate``."""
    gate.mkdir()
    topo = gate / "slow.py"
    topo.write_text(SLOW)
    app_id = unique_topic_name(gate.name)
    cmd = [sys.executable, "-m", "streams", "run", str(topo), "--app-id", app_id]
    cmd += ["--set", f"input={source}", "-b", bootstrap, "--no-status", "--batch-size", "1"]
    env = {**os.environ, "GATE_DIR": str(gate)}
    log = (gate / "stderr").open("wb")
    return subprocess.Popen(cmd, env=env, stderr=log), app_id


def test_first_signal_finishes_and_commits_second_exits_at_once(
    kafka_bootstrap: str, make_topic: TopicFactory, tmp_path: Path
) -> None:
    codec = AvroCodec(default_catalog())
    source = make_topic("slow-in", partitions=1)
    produce_envelopes(kafka_bootstrap, source, [order(i) for i in range(3)], codec)

    gate = tmp_path / "graceful"
    graceful, app_id = start(gate, kafka_bootstrap, source)
    try:
        wait_until((gate / "started-o-0").exists, 60, what="record 0 in hand")
        graceful.send_signal(signal.SIGTERM)
        (gate / "release").touch()
        assert graceful.wait(60) == 0
    finally:
        graceful.kill()
    # stopped after the record in hand (batch size 1): it, and nothing after it, committed
    assert committed(kafka_bootstrap, app_id, source) == 1

    gate = tmp_path / "forced"
    forced, app_id = start(gate, kafka_bootstrap, source)
    try:
        wait_until((gate / "started-o-0").exists, 60, what="record 0 in hand")
        forced.send_signal(signal.SIGTERM)
        # Python runs one handler for signals that arrive together: send the second only
        # once the first has been handled
        wait_until(lambda: b"send it again" in (gate / "stderr").read_bytes(), 30)
        forced.send_signal(signal.SIGTERM)
        assert forced.wait(60) == 130
    finally:
        forced.kill()
    assert committed(kafka_bootstrap, app_id, source) < 0  # nothing was committed
