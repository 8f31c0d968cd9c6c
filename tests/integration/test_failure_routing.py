"""Failure routing in the native runtime on a real broker: retries keep per-key order and
do not hold up other keys; permanent failures and undecodable records land in the DLQ with
their error headers, and the partition keeps moving."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any, cast

import factories
import pytest
from confluent_kafka import Message, Producer
from runtime_thread import RuntimeThread

from streams.cluster import Topics, admin_client
from streams.codec import AvroCodec
from streams.codec.envelope_wire import envelope_value, read_envelope, type_version_bytes
from streams.envelope import Envelope
from streams.failures import RetryPolicy
from streams.failures.headers import KIP_1034_HEADERS, parse_failure_headers
from streams.runtime import Runtime, RuntimeConfig
from streams.runtime.topics import prepare_topics
from streams.schemas import default_catalog
from streams.testing import TopicFactory, TopicReader, produce_envelopes, wait_until
from streams.testing.topics import unique_topic_name
from streams.topology import Topology, TopologyBuilder, owned

CODEC = AvroCodec(default_catalog())
SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


payment = partial(factories.payment, source="test")


class Running(RuntimeThread):
    """An instance of ``topology`` in this process, its topics prepared first."""

    def __init__(self, topology: Topology, bootstrap: str, **config: Any) -> None:
        prepare_topics(Topics(admin_client(bootstrap)), topology)
        super().__init__(
            Runtime(
                topology,
                RuntimeConfig(bootstrap=bootstrap, batch_size=50, commit_interval_s=0.5, **config),
            )
        )

    def stop(self, timeout: float = 60) -> BaseException | None:
        return super().stop(timeout)


@pytest.fixture
def running() -> Iterator[list[Running]]:
    started: list[Running] = []
    yield started
    errors = [r.stop() for r in started]
    assert errors == [None] * len(started), "an instance failed"


def assigned(r: Running) -> list[tuple[str, int]]:
    """The instance's partitions, read from another thread (a rebalance may be changing
    them: then "none yet")."""
    try:
        return r.runtime.assignment
    except RuntimeError:  # dictionary changed size during iteration
        return []


def pids(records: list[Message]) -> list[str]:
    return [CODEC.decode(m.value(), cast(Any, m.headers())).data["payment_id"] for m in records]


def relabelled(
    env: Envelope, *, type_: str | None = None, version: int | None = None
) -> tuple[bytes, list[tuple[str, bytes]]]:
    """``env`` as a well-formed envelope claiming another type or version, as a producer
    with a newer catalog would write it (consistent headers included)."""
    value, headers = CODEC.encode(env)
    type_, version = type_ or env.type, version or env.version
    value = envelope_value(env, read_envelope(value)["data"], type_version_bytes(type_, version))
    new = {"ce_type": type_.encode(), "ce_dataversion": b"%d" % version}
    return value, [(k, new.get(k, v)) for k, v in headers]


def headers_of(msg: Message) -> dict[str, bytes | None]:
    return dict(cast(Any, msg.headers()) or [])


def test_a_record_failing_twice_succeeds_once_in_key_order_without_delaying_other_keys(
    kafka_bootstrap: str, make_topic: TopicFactory, running: list[Running]
) -> None:
    source = make_topic("pay-in", partitions=2)
    app = unique_topic_name("retry")
    attempts: Counter[str] = Counter()
    seen_at: dict[str, float] = {}

    def flaky(env: Envelope) -> Envelope:
        pid = env.data["payment_id"]
        attempts[pid] += 1
        seen_at.setdefault(pid, time.monotonic())
        if pid == "a-2" and attempts[pid] <= 2:
            raise TimeoutError("card network timed out")
        return env

    builder = TopologyBuilder(app, retry=RetryPolicy.parse("1s, 1s"))
    builder.source(source, type="payment.captured", version=1).map(flaky).to(
        owned("out"), type="payment.captured", version=1
    )
    topology = builder.build()
    running.append(Running(topology, kafka_bootstrap))
    key_a = [payment(f"a-{i}", "order-a") for i in range(1, 5)]
    others = [payment(f"b-{i}", f"order-b{i}") for i in range(1, 6)]
    started = time.monotonic()
    produce_envelopes(kafka_bootstrap, source, [*key_a[:2], *others, *key_a[2:]], CODEC)

    with TopicReader(kafka_bootstrap, f"{app}-out") as reader:
        records = reader.wait_for(lambda rs: len(rs) >= 9, 60, what="9 outputs")
        reader.poll(1.0)  # nothing more arrives: a-2's failed attempts wrote nothing
        records = reader.records
    out = pids(records)
    assert sorted(out) == sorted(e.data["payment_id"] for e in [*key_a, *others])
    assert [p for p in out if p.startswith("a-")] == ["a-1", "a-2", "a-3", "a-4"]
    assert attempts["a-2"] == 3
    assert all(attempts[p] == 1 for p in ["a-1", "a-3", "a-4", *(f"b-{i}" for i in range(1, 6))])
    # other keys went through before the first retry delay (1 s) was up
    first_retry_due = seen_at["a-2"] + 1.0
    assert all(seen_at[f"b-{i}"] < first_retry_due for i in range(1, 6)), (seen_at, started)
    assert seen_at["a-3"] >= first_retry_due  # a-3 waited behind a-2
    stats = running[0].runtime.stats.failures
    assert stats["retried"] == 2 and stats["recovered"] == 1 and stats["dead_lettered"] == 0


def test_a_record_failing_every_time_lands_in_the_dlq_and_its_key_moves_on(
    kafka_bootstrap: str, make_topic: TopicFactory, running: list[Running]
) -> None:
    source = make_topic("pay-in", partitions=1)
    app = unique_topic_name("dlq")

    def refuse_negative(env: Envelope) -> Envelope:
        if env.data["amount_cents"] < 0:
            raise ValueError("negative amount")
        return env

    builder = TopologyBuilder(app, retry="1s, 1s")
    builder.source(source, type="payment.captured", version=1).map(refuse_negative).to(
        owned("out"), type="payment.captured", version=1
    )
    running.append(Running(builder.build(), kafka_bootstrap))
    envs = [payment("k-1", "k"), payment("k-2", "k", -5), payment("k-3", "k"), payment("k-4", "k")]
    produce_envelopes(kafka_bootstrap, source, envs, CODEC)

    with TopicReader(kafka_bootstrap, f"{app}-{source}-dlq") as dlq:
        (dead,) = dlq.wait_for(lambda rs: len(rs) >= 1, 60, what="the dead letter")
    with TopicReader(kafka_bootstrap, f"{app}-out") as reader:
        out = pids(reader.wait_for(lambda rs: len(rs) >= 3, 60, what="3 outputs"))
    assert out == ["k-1", "k-3", "k-4"]

    value, _ = CODEC.encode(envs[1])
    assert dead.key() == b"k" and dead.value() == value  # the record untouched
    hdrs = headers_of(dead)
    assert all(name in hdrs for name in KIP_1034_HEADERS)
    info = parse_failure_headers(cast(Any, dead.headers()))
    assert info is not None
    assert info.exception.endswith("ValueError") and info.message == "negative amount"
    assert info.attempts == 3 and info.origin.topic == source and info.origin.offset == 1
    assert info.app_id == app and info.step == "refuse_negative"
    assert info.first_failure < info.last_failure
    assert hdrs["ce_id"] == envs[1].id.encode()  # the original headers are kept
    with TopicReader(kafka_bootstrap, source) as original:
        failed = original.wait_for(lambda rs: len(rs) >= 2, 30)[1]
    assert dead.timestamp()[1] == failed.timestamp()[1]  # and its timestamp


def test_undecodable_records_go_to_the_dlq_without_retries(
    kafka_bootstrap: str, make_topic: TopicFactory, running: list[Running]
) -> None:
    source = make_topic("pay-in", partitions=1)
    app = unique_topic_name("bad")
    calls: Counter[str] = Counter()

    def count(env: Envelope) -> Envelope:
        calls[env.data["payment_id"]] += 1
        return env

    builder = TopologyBuilder(app, retry="1s, 1s")
    builder.source(source, type="payment.captured", version=1).map(count).to(
        owned("out"), type="payment.captured", version=1
    )
    running.append(Running(builder.build(), kafka_bootstrap))

    good_value, good_headers = CODEC.encode(payment("g-1", "k"))
    other_value, other_headers = CODEC.encode(payment("g-2", "k"))
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    rows: list[tuple[bytes, Any]] = [
        (good_value, good_headers),
        (b"\x00garbage, not an envelope", None),
        relabelled(payment("u-1", "k"), type_="shipment.sent"),
        relabelled(payment("u-2", "k"), version=99),
        (other_value, other_headers),
    ]
    for value, hdrs in rows:
        producer.produce(source, value=value, key=b"k", headers=hdrs)
    assert producer.flush(30) == 0

    with TopicReader(kafka_bootstrap, f"{app}-{source}-dlq") as dlq:
        dead = dlq.wait_for(lambda rs: len(rs) >= 3, 60, what="3 dead letters")
    with TopicReader(kafka_bootstrap, f"{app}-out") as reader:
        out = pids(reader.wait_for(lambda rs: len(rs) >= 2, 60, what="2 outputs"))
    assert out == ["g-1", "g-2"]
    infos = [parse_failure_headers(cast(Any, m.headers())) for m in dead]
    assert [i.origin.offset for i in infos if i] == [1, 2, 3]
    assert all(i is not None and i.attempts == 1 and i.stage.value == "decode" for i in infos)
    assert [m.value() for m in dead] == [rows[1][0], rows[2][0], rows[3][0]]


def test_exactly_once_with_retries_writes_each_output_once_in_key_order(
    kafka_bootstrap: str, make_topic: TopicFactory, running: list[Running]
) -> None:
    source = make_topic("pay-in", partitions=1)
    app = unique_topic_name("eos")
    attempts: Counter[str] = Counter()

    def flaky(env: Envelope) -> Envelope:
        pid = env.data["payment_id"]
        attempts[pid] += 1
        if pid == "e-2" and attempts[pid] == 1:
            raise TimeoutError("card network timed out")
        return env

    builder = TopologyBuilder(app, retry="1s")
    builder.source(source, type="payment.captured", version=1).map(flaky).to(
        owned("out"), type="payment.captured", version=1
    )
    running.append(Running(builder.build(), kafka_bootstrap, processing_guarantee="exactly_once"))
    produce_envelopes(kafka_bootstrap, source, [payment(f"e-{i}", "k") for i in range(1, 5)], CODEC)
    committed: dict[str, object] = {"isolation.level": "read_committed"}
    with TopicReader(kafka_bootstrap, f"{app}-out", config=committed) as reader:
        reader.wait_for(lambda rs: len(rs) >= 4, 60, what="4 outputs")
        reader.poll(1.0)
        assert pids(reader.records) == ["e-1", "e-2", "e-3", "e-4"]
    assert running[0].runtime.stats.failures["recovered"] == 1


def test_a_retried_record_is_not_taken_for_a_duplicate_of_its_failed_attempt(
    kafka_bootstrap: str, make_topic: TopicFactory, running: list[Running]
) -> None:
    source = make_topic("pay-in", partitions=1)
    app = unique_topic_name("dedup-retry")
    attempts: Counter[str] = Counter()

    def flaky(env: Envelope) -> Envelope:
        pid = env.data["payment_id"]
        attempts[pid] += 1
        if pid == "d-2" and attempts[pid] == 1:
            raise TimeoutError("card network timed out")
        return env

    builder = TopologyBuilder(app, retry="1s")
    unique = builder.source(source, type="payment.captured", version=1).dedup(
        ttl=3600, backend="memory"
    )
    unique.map(flaky).to(owned("out"), type="payment.captured", version=1)
    running.append(Running(builder.build(), kafka_bootstrap))
    produce_envelopes(kafka_bootstrap, source, [payment(f"d-{i}", "k") for i in range(1, 4)], CODEC)
    with TopicReader(kafka_bootstrap, f"{app}-out") as reader:
        reader.wait_for(lambda rs: len(rs) >= 3, 60, what="3 outputs")
        assert pids(reader.records) == ["d-1", "d-2", "d-3"]
    assert attempts["d-2"] == 2


def test_two_instances_share_the_work_and_keep_order_through_retries(
    kafka_bootstrap: str, make_topic: TopicFactory, running: list[Running]
) -> None:
    source = make_topic("pay-in", partitions=4)
    app = unique_topic_name("scale")
    attempts: Counter[str] = Counter()

    def flaky(env: Envelope) -> Envelope:
        pid = env.data["payment_id"]
        attempts[pid] += 1
        if pid.startswith("x-") and attempts[pid] == 1:
            raise TimeoutError("card network timed out")
        return env

    builder = TopologyBuilder(app, retry="1s")
    builder.source(source, type="payment.captured", version=1).map(flaky).to(
        owned("out"), type="payment.captured", version=1
    )
    topology = builder.build()
    running.extend([Running(topology, kafka_bootstrap), Running(topology, kafka_bootstrap)])
    wait_until(
        lambda: all(len(assigned(r)) == 4 for r in running),  # 2 of the input, 2 of the tier
        60,
        what="the two instances sharing the partitions",
        seen=lambda: str([r.error or assigned(r) for r in running]),
    )
    keys = [f"k{i}" for i in range(12)]
    envs = [payment(f"{kind}{key}", key) for kind in ("a-", "x-", "c-") for key in keys]
    produce_envelopes(kafka_bootstrap, source, envs, CODEC)
    with TopicReader(kafka_bootstrap, f"{app}-out") as reader:
        reader.wait_for(lambda rs: len(rs) >= len(envs), 90, what="every output")
        out = [
            (m.key(), CODEC.decode(m.value(), cast(Any, m.headers())).data["payment_id"])
            for m in reader.records
        ]
    for key in keys:
        assert [p for k, p in out if k == key.encode()] == [f"a-{key}", f"x-{key}", f"c-{key}"]
    # each instance has partition n of the input and of its retry tier, or neither
    for r in running:
        mine = {p for t, p in r.runtime.assignment if t == source}
        tier = {p for t, p in r.runtime.assignment if t.endswith("-retry-1")}
        assert mine and mine == tier
