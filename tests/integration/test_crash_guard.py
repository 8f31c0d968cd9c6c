"""A record that kills the process (``os._exit`` in a step: nothing to catch) three times
in a row is dead-lettered at the fourth start, and its partition moves on: with records in
flight at once too (at-least-once without stores, exactly-once with them), and however far
into a backlog it is, past commits of each run."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any, cast

import factories
import pytest

from streams.codec import AvroCodec
from streams.dlq import read_dlq
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


# Each death leaves the dead process in the group until its session times out (10 s): a
# restart as a dynamic member would wait that out before it is given the partition, three
# times per test. Restarted in place (same state dir, so the same instance name), a static
# member takes its partition back at once (KIP-345), as a supervised deployment restarting
# a crashed instance would; the guard itself does not depend on how the group is joined.
RESTART_IN_PLACE = "--static-membership"


order = partial(factories.order, total_cents=1)


def die_three_times(cmd: list[str], *, timeout: float) -> None:
    """Run ``cmd`` three times; each run dies with the killer in hand (exit 3), none
    condemns it sooner."""
    for death in range(3):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        assert done.returncode == 3, (death, done.stdout[-3000:], done.stderr[-3000:])


def order_ids(codec: AvroCodec, records: Sequence[Any]) -> list[str]:
    return [codec.decode(m.value(), cast(Any, m.headers())).data["order_id"] for m in records]


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
        "--state-dir", str(tmp_path / "state"), RESTART_IN_PLACE,
    ]  # fmt: skip
    die_three_times(cmd, timeout=120)

    fourth = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        with TopicReader(kafka_bootstrap, f"{app_id}-out") as reader:

            def ids(records: Sequence[Any]) -> list[str]:
                return order_ids(codec, records)

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


KILLER_IN_A_BACKLOG = """
import asyncio
import os
from streams.topology import TopologyBuilder, owned

async def look_up(env):
    await asyncio.sleep(0.001)  # a service call: with concurrency, many in flight
    return env

def judge(env):
    if env.data["order_id"] == "o-killer":
        os._exit(3)
    return env

def build(app_id="killer", input="orders", store="no"):
    b = TopologyBuilder(app_id)
    orders = b.source(input, type="order.placed", version=2)
    if store == "yes":
        orders = orders.dedup(ttl=3600, by=lambda env: env.data["order_id"], name="once")
    orders.map(look_up).map(judge).to(owned("out"), type="order.placed", version=2)
    return b.build()
"""

BEFORE, AFTER = 1_500, 100  # orders before and after the killer: a run commits on the way


@pytest.mark.parametrize(
    "mode",
    [
        ("at_least_once", "no", 64),
        ("exactly_once", "yes", 64),
    ],
    ids=lambda mode: "-".join(map(str, mode)),
)
def test_a_killer_deep_in_a_backlog_is_dead_lettered_after_three_deaths(
    kafka_bootstrap: str, make_topic: TopicFactory, tmp_path: Path, mode: tuple[str, str, int]
) -> None:
    guarantee, store, concurrency = mode
    codec = AvroCodec(default_catalog())
    topic = make_topic("killer-deep", partitions=1)
    app_id = unique_topic_name("killer-deep")
    path = tmp_path / "killer.py"
    path.write_text(KILLER_IN_A_BACKLOG)
    names = [f"o-{n}" for n in range(BEFORE)] + ["o-killer"]
    names += [f"o-{n}" for n in range(BEFORE, BEFORE + AFTER)]
    produce_envelopes(kafka_bootstrap, topic, [order(n) for n in names], codec)
    cmd = [
        sys.executable, "-m", "streams", "run", str(path), "--app-id", app_id,
        "--set", f"input={topic}", "--set", f"store={store}", "--bootstrap", kafka_bootstrap,
        "--no-status", "--state-dir", str(tmp_path / "state"), "--guarantee", guarantee,
        "--concurrency", str(concurrency), RESTART_IN_PLACE,
    ]  # fmt: skip
    die_three_times(cmd, timeout=180)

    fourth = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        with TopicReader(kafka_bootstrap, f"{app_id}-out") as reader:

            def ids(records: Sequence[Any]) -> list[str]:
                return order_ids(codec, records)

            last = f"o-{BEFORE + AFTER - 1}"
            out = reader.wait_for(lambda rs: last in ids(rs), 120, what="the orders after it")
        assert fourth.poll() is None  # still running
    finally:
        fourth.terminate()
        output, _ = fourth.communicate(timeout=60)
    assert fourth.returncode == 0, output[-3000:]
    got = Counter(ids(out))
    assert set(got) == set(names) - {"o-killer"}
    if guarantee == "exactly_once":  # the dying runs' outputs were never committed
        assert set(got.values()) == {1}
    (dead,) = read_dlq(kafka_bootstrap, f"{app_id}-{topic}-dlq").letters
    assert dead.failure is not None and dead.failure.origin.offset == BEFORE
    assert dead.failure.step == "crash-guard"
