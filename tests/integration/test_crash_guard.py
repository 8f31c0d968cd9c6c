"""A record that kills the process (``os._exit`` in a step: nothing to catch) three times
in a row is dead-lettered at the fourth start, and its partition moves on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, cast

from streams.codec import AvroCodec
from streams.dlq import read_dlq
from streams.envelope import Envelope
from streams.schemas import default_catalog
from streams.testing import TopicFactory, TopicReader, produce_envelopes
from streams.testing.topics import unique_topic_name

KILLER = """
import os
from streams.topology import TopologyBuilder, owned

def judge(env):
    if env.data["order_id"] == "o-killer":
        os._exit(3)  # as a segfault or the OOM killer would: no exception, no cleanup
    return env

def build(app_id="killer", input="orders"):
    b = TopologyBuilder(app_id)
    b.source(input, type="order.placed", version=2).map(judge).to(
        owned("out"), type="order.placed", version=2
    )
    return b.build()
"""


def order(name: str) -> Envelope:
    data = {"order_id": name, "customer_id": "c", "items": [], "total_cents": 1}
    return Envelope.new("order.placed", {**data, "currency": "EUR"}, version=2, key="c")


def test_a_record_that_kills_the_process_three_times_is_dead_lettered_at_the_fourth_start(
    kafka_bootstrap: str, make_topic: TopicFactory, tmp_path: Path
) -> None:
    codec = AvroCodec(default_catalog())
    topic = make_topic("killer-in", partitions=1)
    app_id = unique_topic_name("killer")
    path = tmp_path / "killer.py"
    path.write_text(KILLER)
    names = ["o-1", "o-2", "o-killer", "o-4", "o-5"]
    produce_envelopes(kafka_bootstrap, topic, [order(n) for n in names], codec)
    cmd = [
        sys.executable, "-m", "streams", "run", str(path), "--app-id", app_id,
        "--set", f"input={topic}", "--bootstrap", kafka_bootstrap, "--no-status",
        "--state-dir", str(tmp_path / "state"),
    ]  # fmt: skip
    for death in range(3):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 3, (death, done.stdout, done.stderr)

    fourth = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        with TopicReader(kafka_bootstrap, f"{app_id}-out") as reader:

            def ids(records: list[Any]) -> list[str]:
                return [
                    codec.decode(m.value(), cast(Any, m.headers())).data["order_id"]
                    for m in records
                ]

            out = reader.wait_for(lambda rs: "o-5" in ids(rs), 90, what="the orders after it")
        # at-least-once: a dying run may have sent o-1 and o-2 before it died; never o-killer
        got = ids(out)
        assert set(got) == {"o-1", "o-2", "o-4", "o-5"} and got[-2:] == ["o-4", "o-5"]
        assert fourth.poll() is None  # still running
    finally:
        fourth.terminate()
        output, _ = fourth.communicate(timeout=60)
    assert fourth.returncode == 0, output
    (dead,) = read_dlq(kafka_bootstrap, f"{app_id}-{topic}-dlq").letters
    assert dead.failure is not None and dead.offset >= 0
    assert dead.failure.origin.offset == 2 and dead.failure.step == "crash-guard"
    assert dead.failure.exception.endswith("CrashLoopError")
    assert codec.decode(dead.value, cast(Any, dead.headers)).data["order_id"] == "o-killer"
