"""Failure routing across processes, with `streams run` on a real broker: an instance killed
while records wait in retry tiers loses nothing and keeps per-key order after a restart;
`streams dlq replay` after a fix gets the dead letters processed and says so."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from cli_runner import streams
from confluent_kafka import Message

from streams.codec import AvroCodec
from streams.schemas import default_catalog
from streams.testing import TopicFactory, TopicReader, produce_envelopes
from streams.testing.topics import unique_topic_name
from streams.topology.loader import import_file

PAYMENTS = Path(__file__).resolve().parents[2] / "topology" / "payments.py"
CODEC = AvroCodec(default_catalog())
payment = import_file(PAYMENTS).payment


class Instances:
    """`streams run topology/payments.py` processes, killed at the end of the test."""

    def __init__(self, bootstrap: str, logs: Path) -> None:
        self.bootstrap = bootstrap
        self.logs = logs
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, app_id: str, source: str, *params: str) -> subprocess.Popen[bytes]:
        cmd = [sys.executable, "-m", "streams", "run", str(PAYMENTS), "--app-id", app_id]
        cmd += ["--set", f"input={source}", "-b", self.bootstrap, "--no-status"]
        for param in params:
            cmd += ["--set", param]
        log = (self.logs / f"instance-{len(self.procs)}.log").open("wb")
        proc = subprocess.Popen(cmd, stderr=log, stdout=log)
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)


@pytest.fixture
def instances(kafka_bootstrap: str, tmp_path: Path) -> Iterator[Instances]:
    started = Instances(kafka_bootstrap, tmp_path)
    yield started
    started.close()


def decoded(records: list[Message]) -> list[tuple[str, str]]:
    """``(key, payment id)`` of each output, in the order read (per partition: offsets)."""
    out = []
    for msg in records:
        env = CODEC.decode(msg.value(), cast(Any, msg.headers()))
        out.append((env.key or "", env.data["payment_id"]))
    return out


def test_a_killed_instance_restarts_without_losing_waiting_records_or_their_order(
    kafka_bootstrap: str, make_topic: TopicFactory, instances: Instances
) -> None:
    source = make_topic("pay-in", partitions=2)
    app = unique_topic_name("kill")
    keys = [f"order-{k}" for k in range(4)]
    # per key: one that settles, one that times out twice (it waits in the retry tiers),
    # and two behind it that must wait for it
    envs = [payment(f"{kind}{key}", key) for kind in ("a-", "flaky-", "c-", "d-") for key in keys]
    first = instances.start(app, source, "retry=5s, 5s")  # killed in the first wait
    produce_envelopes(kafka_bootstrap, source, envs, CODEC)

    # Kill once the waiting rooms are durable: their changelog holds the parked records.
    with TopicReader(kafka_bootstrap, f"{app}-{source}-waiting-changelog") as changelog:
        changelog.wait_for(lambda rs: len(rs) >= len(keys), 60, what="waiting-room entries")
    with TopicReader(kafka_bootstrap, f"{app}-{source}-retry-1") as tier:
        tier.wait_for(lambda rs: len(rs) >= len(keys), 60, what="records in retry-1")
    first.send_signal(signal.SIGKILL)
    first.wait(30)

    # The restarted process forgets the flaky step's failures: two more tiers of attempts.
    instances.start(app, source, "retry=1s, 1s, 1s")
    with TopicReader(kafka_bootstrap, f"{app}-settled") as reader:
        wanted = {e.data["payment_id"] for e in envs}
        reader.wait_for(
            lambda rs: {p for _, p in decoded(list(rs))} >= wanted, 90, what="every payment"
        )
        out = decoded(reader.records)
    for key in keys:  # at least once; the first time each was written, in order
        firsts = list(dict.fromkeys(p for k, p in out if k == key))
        assert firsts == [f"a-{key}", f"flaky-{key}", f"c-{key}", f"d-{key}"], out


def dlq_json(bootstrap: str, *args: str) -> Any:
    """What ``streams dlq ARGS --json`` printed, once it succeeded."""
    done = streams("dlq", *args, "--json", bootstrap=bootstrap, env={"NO_COLOR": "1"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_dlq_replay_after_a_fix_processes_the_dead_letters(
    kafka_bootstrap: str, make_topic: TopicFactory, instances: Instances
) -> None:
    source = make_topic("pay-in", partitions=1)
    app = unique_topic_name("replay")
    dlq = f"{app}-{source}-dlq"
    envs = [payment("p-1", "o-1"), payment("p-2", "o-2", -100), payment("p-3", "o-3", -7)]
    broken = instances.start(app, source, "retry=1s")
    produce_envelopes(kafka_bootstrap, source, envs, CODEC)
    with TopicReader(kafka_bootstrap, dlq) as reader:
        reader.wait_for(lambda rs: len(rs) >= 2, 60, what="2 dead letters")
    broken.send_signal(signal.SIGTERM)
    assert broken.wait(60) == 0

    fixed = instances.start(app, source, "retry=1s", "fixed=1")
    replayed = dlq_json(kafka_bootstrap, "replay", dlq, "--execute")
    assert replayed["sent"] == 2
    with TopicReader(kafka_bootstrap, f"{app}-settled") as reader:
        reader.wait_for(lambda rs: len(rs) >= 3, 60, what="3 settled payments")
        assert sorted(p for _, p in decoded(reader.records)) == ["p-1", "p-2", "p-3"]
    summary = dlq_json(kafka_bootstrap, "list", dlq)
    assert summary["total"] == 2 and summary["replayed"] == 2
    fixed.send_signal(signal.SIGTERM)
    assert fixed.wait(60) == 0
