"""Scaling out and crashing on a real broker: no record is lost, no key goes backwards.

Two `streams run` instances share 8 partitions; a third joins mid-stream; one is killed
with SIGKILL. Afterwards every input is in the output (at-least-once: duplicates allowed)
and, per key, sequence numbers only step forward by one, or jump back where a redelivery
repeats a run that was already written. With both group protocols: classic (a 6 s
session) and KIP-848's consumer (the broker's session, 10 s on the local broker, before
the killed instance's partitions move).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any, cast

import pytest
from confluent_kafka import Consumer, ConsumerGroupType, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import Message
from factories import order

from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.schemas import default_catalog
from streams.testing import TopicFactory, TopicReader, produce_envelopes, wait_until
from streams.testing.topics import unique_topic_name

ROOT = Path(__file__).resolve().parents[2]
MIRROR = ROOT / "topology" / "mirror.py"
KEYS, PER_KEY, PARTITIONS = 100, 200, 8
CHUNK = PER_KEY // 4
# The classic protocol's session is the client's to shorten; the consumer protocol's is
# the broker's (librdkafka refuses the client settings).
GROUP_SETTINGS = {
    "classic": ["-Xconsumer.session.timeout.ms=6000", "-Xconsumer.heartbeat.interval.ms=1000"],
    "consumer": ["-Xconsumer.group.protocol=consumer"],
}


def orders(seqs: range) -> list[Envelope]:
    keys = [f"key-{k:03d}" for k in range(KEYS)]
    return [order(f"{key}:{seq}", key, total_cents=seq) for seq in seqs for key in keys]


def decode(codec: AvroCodec, msg: Message) -> Envelope:
    return codec.decode(msg.value(), cast(Any, msg.headers()))


class Instances:
    """`streams run` subprocesses of one app; their logs go to files for failure reports."""

    def __init__(
        self, bootstrap: str, app_id: str, topic: str, logs: Path, protocol: str = "classic"
    ) -> None:
        self.cmd = [
            sys.executable, "-m", "streams", "run", str(MIRROR),
            "--app-id", app_id, "--set", f"input={topic}", "--bootstrap", bootstrap,
            "--no-status", *GROUP_SETTINGS[protocol],
        ]  # fmt: skip
        self.logs = logs
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str) -> None:
        log = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        env = {**os.environ, "STREAMS_LOG_JSON": "1"}
        self.procs[name] = subprocess.Popen(self.cmd, stdout=log, stderr=log, env=env)

    def tail(self) -> str:
        return "\n".join(
            f"--- {name}:\n" + (self.logs / f"{name}.log").read_text()[-1500:]
            for name in self.procs
        )

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.fixture(params=sorted(GROUP_SETTINGS))
def protocol(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def instances(
    kafka_bootstrap: str, tmp_path: Path, protocol: str
) -> Iterator[Callable[[str], Instances]]:
    app_id = unique_topic_name("scale")
    holder: list[Instances] = []

    def make(topic: str) -> Instances:
        inst = Instances(kafka_bootstrap, app_id, topic, tmp_path, protocol)
        holder.append(inst)
        return inst

    yield make
    for inst in holder:
        inst.stop_all()


def describe(admin: AdminClient, group: str) -> Any:
    try:
        return admin.describe_consumer_groups([group])[group].result(timeout=10)
    except KafkaException:  # e.g. NOT_COORDINATOR while a fresh broker sets up groups
        return None


def group_members(admin: AdminClient, group: str) -> int:
    result = describe(admin, group)
    return -1 if result is None else len(result.members)


def committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        tps = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], 10)
        return {tp.partition: tp.offset for tp in tps}
    finally:
        consumer.close()


def test_scale_out_and_sigkill_lose_nothing_and_keep_per_key_order(
    kafka_bootstrap: str,
    kafka_admin: AdminClient,
    make_topic: TopicFactory,
    instances: Callable[[str], Instances],
    protocol: str,
) -> None:
    codec = AvroCodec(default_catalog())
    topic = make_topic("scale-in", partitions=PARTITIONS)
    run = instances(topic)
    app_id = run.cmd[run.cmd.index("--app-id") + 1]
    output = f"{app_id}-mirror"
    seen: dict[str, list[int]] = {}
    decoded = 0

    def decode_new(records: list[Message]) -> int:
        nonlocal decoded
        for msg in records[decoded:]:
            env = decode(codec, msg)
            seen.setdefault(env.key or "", []).append(env.data["total_cents"])
        decoded = len(records)
        return sum(len(set(v)) for v in seen.values())

    produce_envelopes(kafka_bootstrap, topic, orders(range(0, CHUNK)), codec)
    run.start("a")
    run.start("b")
    with TopicReader(kafka_bootstrap, output) as reader:
        try:
            reader.wait_for(lambda rs: len(rs) >= CHUNK * KEYS // 2, 120, what="first outputs")
            wait_until(lambda: group_members(kafka_admin, app_id) == 2, 60, what="2 members")
            kind = describe(kafka_admin, app_id).type  # the group runs the protocol asked
            assert kind == getattr(ConsumerGroupType, protocol.upper()), kind

            produce_envelopes(kafka_bootstrap, topic, orders(range(CHUNK, 2 * CHUNK)), codec)
            run.start("c")  # joins mid-stream
            wait_until(lambda: group_members(kafka_admin, app_id) == 3, 60, what="3 members")
            reader.wait_for(lambda rs: len(rs) >= 3 * CHUNK * KEYS // 2, 120, what="outputs")

            produce_envelopes(kafka_bootstrap, topic, orders(range(2 * CHUNK, 3 * CHUNK)), codec)
            run.procs["a"].send_signal(signal.SIGKILL)  # with work in flight
            produce_envelopes(kafka_bootstrap, topic, orders(range(3 * CHUNK, PER_KEY)), codec)

            total = KEYS * PER_KEY
            reader.wait_for(lambda rs: decode_new(list(rs)) >= total, 120, what="every input")
        except Exception:
            print(run.tail())
            raise

    # every input is in the output
    assert sorted(seen) == [f"key-{k:03d}" for k in range(KEYS)]
    for key, seqs in seen.items():
        assert set(seqs) == set(range(PER_KEY)), key
        # per key: +1 steps, or a jump back where a redelivery repeats an earlier run
        assert seqs[0] == 0, key
        for prev, cur in pairwise(seqs):
            assert cur == prev + 1 or cur <= prev, (key, prev, cur)

    duplicates = sum(len(v) for v in seen.values()) - KEYS * PER_KEY
    print(f"{duplicates} duplicate outputs after the SIGKILL")

    # the survivors stop gracefully (SIGTERM) and commit everything they processed
    for name in ("b", "c"):
        run.procs[name].send_signal(signal.SIGTERM)
    for name in ("b", "c"):
        assert run.procs[name].wait(60) == 0, run.tail()
    ends = {p: kafka_admin_high(kafka_bootstrap, topic, p) for p in range(PARTITIONS)}
    assert committed(kafka_bootstrap, app_id, topic) == ends


def kafka_admin_high(bootstrap: str, topic: str, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "streams-watermarks"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, partition), 10)[1])
    finally:
        consumer.close()
