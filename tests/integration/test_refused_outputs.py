"""Nothing lost when the broker refuses an output, under both guarantees, on the broker.

An output refused for its record's sake (here: too large) is that record's failure: the
record goes to its input's DLQ with the error headers, every other record comes out as if
it had not been there (its dedup id and its window update undone too: a replay of its
letter after a fix is processed, not dropped as a duplicate), and the instance goes on,
its group caught up. Two refusals: librdkafka's own, before the write is sent (over the
producer's ``message.max.bytes``), and the broker's, in a delivery report, for the whole
batch the record was sent in (over the output topic's ``max.message.bytes``).
"""

from __future__ import annotations

import base64
import os
from collections import Counter
from pathlib import Path

import factories
import pytest
from confluent_kafka import Message, Producer
from confluent_kafka.admin import AdminClient
from runtime_thread import RuntimeThread

from streams.cluster import Topics, create_topic
from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.failures.headers import FAILURE_HEADERS, parse_failure_headers
from streams.runtime import Runtime, RuntimeConfig
from streams.runtime.topics import prepare_topics
from streams.schemas import default_catalog
from streams.testing import TopicFactory, TopicReader, caught_up, produce_envelopes, wait_until
from streams.testing.topics import unique_topic_name
from streams.topology import Topology, TopologyBuilder, Update, owned, tumbling

T, V = "order.placed", 2
CUSTOMERS = 3
GOOD = 60  # orders that come out
CODEC = AvroCodec(default_catalog())
GUARANTEES = ["at_least_once", "exactly_once"]
COMMITTED = {"isolation.level": "read_committed"}


class Padding:
    """Pads order ``big``'s output with ``size`` bytes, until ``fixed``: random ones, as
    the producer compresses (lz4) what the broker's limit counts."""

    def __init__(self, big: str, size: int) -> None:
        self.big, self.size, self.fixed = big, size, False

    def __call__(self, env: Envelope) -> Envelope:
        if env.data["order_id"] != self.big or self.fixed:
            return env
        sku = base64.b64encode(os.urandom(self.size * 3 // 4)).decode()
        line = {"sku": sku, "quantity": 1, "unit_price_cents": 1}
        return env.with_data({**env.data, "items": [line]})


def order(n: int) -> Envelope:
    return factories.order(n, f"c-{n % CUSTOMERS}")


def as_count(update: Update) -> Envelope:
    """A window's count of a customer's orders, as an order whose total is the count."""
    return update.cause.with_data({**update.cause.data, "total_cents": update.value})


def build(app: str, topic: str, pad: Padding, *, stateful: bool) -> Topology:
    """``topic`` → (dedup by order id →) padding → ``<app>-out``; with ``stateful``, a
    count per customer in an hour's window too → ``<app>-counts``."""
    b = TopologyBuilder(app)
    orders = b.source(topic, type=T, version=V)
    if stateful:
        orders = orders.dedup(ttl=3600, by=lambda e: e.data["order_id"], name="once")
        orders.window(tumbling(3600)).count(name="per-customer").to_stream(as_count).to(
            owned("counts"), type=T, version=V, name="counts"
        )
    orders.map(pad, name="pad").to(owned("out"), type=T, version=V, name="out")
    return b.build(default_catalog())


def order_ids(records: list[Message]) -> Counter[str]:
    return Counter(CODEC.decode(m.value(), m.headers()).data["order_id"] for m in records)


def run_with_a_refused_output(
    bootstrap: str,
    admin: AdminClient,
    topic: str,
    tmp_path: Path,
    guarantee: str,
    *,
    stateful: bool,
    pad_size: int,
    out_max_bytes: int | None = None,
) -> tuple[Padding, Topology, RuntimeThread, list[Envelope]]:
    """Runs the topology on ``GOOD`` orders and the big one (30 before it, 30 after) and
    waits until the group has caught up with the input. ``out_max_bytes``: the output
    topic's ``max.message.bytes`` (created here with it)."""
    app = unique_topic_name("refused")
    pad = Padding("o-30", pad_size)
    topology = build(app, topic, pad, stateful=stateful)
    if out_max_bytes is not None:
        create_topic(admin, f"{app}-out", 3, config={"max.message.bytes": str(out_max_bytes)})
    prepare_topics(Topics(admin), topology)
    sent = [order(n) for n in range(GOOD + 1)]
    produce_envelopes(bootstrap, topic, sent, CODEC)
    config = RuntimeConfig(bootstrap, processing_guarantee=guarantee, state_dir=str(tmp_path))
    instance = RuntimeThread(Runtime(topology, config))
    wait_until(lambda: caught_up(bootstrap, app, topic), 90, what="the input processed")
    return pad, topology, instance, sent


def assert_the_big_order_dead_lettered(bootstrap: str, app: str, topic: str) -> Message:
    with TopicReader(bootstrap, f"{app}-{topic}-dlq", config=COMMITTED) as dlq:
        (letter,) = dlq.wait_for(lambda rs: len(rs) >= 1, 30, what="the dead letter")
    info = parse_failure_headers(letter.headers())  # type: ignore[arg-type]
    assert info is not None
    assert info.error_type == "OutputRefusedError"
    assert "MSG_SIZE_TOO_LARGE" in info.message
    assert info.step == "out"
    assert order_ids([letter]) == Counter({"o-30": 1})
    return letter


@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_a_refused_output_dead_letters_its_record_and_undoes_its_dedup_id_and_window_update(
    kafka_bootstrap: str,
    kafka_admin: AdminClient,
    make_topic: TopicFactory,
    tmp_path: Path,
    guarantee: str,
) -> None:
    topic = make_topic("refused-in", partitions=3)
    pad, topology, instance, _sent = run_with_a_refused_output(
        kafka_bootstrap, kafka_admin, topic, tmp_path, guarantee, stateful=True, pad_size=1_100_000
    )
    app = topology.app_id
    try:
        letter = assert_the_big_order_dead_lettered(kafka_bootstrap, app, topic)
        good = Counter(f"o-{n}" for n in range(GOOD + 1) if n != 30)
        # Waited for by what came out, not by a count: an at-least-once redo writes again.
        with TopicReader(kafka_bootstrap, f"{app}-out", config=COMMITTED) as out:
            seen = order_ids(out.wait_for(lambda rs: set(order_ids(rs)) >= set(good), 30))
        assert set(seen) == set(good)
        if guarantee == "exactly_once":
            assert seen == good
        # The big order's count was undone: each customer's counts run 1..n with no gap,
        # n its good orders (the big order's customer has one fewer).
        per_customer = Counter(order(n).key for n in range(GOOD + 1) if n != 30)

        def counted(records: list[Message]) -> dict[str, set[int]]:
            values: dict[str, set[int]] = {customer: set() for customer in per_customer}
            for m in records:
                customer = m.key().decode()
                values.setdefault(customer, set()).add(
                    CODEC.decode(m.value(), m.headers()).data["total_cents"]
                )
            return values

        def complete(records: list[Message]) -> bool:
            return all(
                len(v) >= per_customer[c] for c, v in counted(records).items() if c in per_customer
            )

        with TopicReader(kafka_bootstrap, f"{app}-counts", config=COMMITTED) as counts:
            records = counts.wait_for(complete, 30)
        for customer, values in counted(records).items():
            assert sorted(values) == list(range(1, per_customer[customer] + 1)), customer

        # After a fix, the letter sent again is processed: its dedup id was undone.
        pad.fixed = True
        replayer = Producer({"bootstrap.servers": kafka_bootstrap})
        headers = [h for h in letter.headers() or [] if h[0] not in FAILURE_HEADERS]
        replayer.produce(topic, letter.value(), letter.key(), headers=headers)
        assert replayer.flush(10) == 0
        wait_until(lambda: caught_up(kafka_bootstrap, app, topic), 60, what="the replay")
        with TopicReader(kafka_bootstrap, f"{app}-out", config=COMMITTED) as out:
            out.wait_for(lambda rs: order_ids(rs)["o-30"] == 1, 30, what="the replayed order")
    finally:
        assert instance.stop(30) is None
    assert instance.runtime.duplicates == 0


@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_a_batch_the_broker_refuses_dead_letters_only_the_record_that_is_too_large(
    kafka_bootstrap: str,
    kafka_admin: AdminClient,
    make_topic: TopicFactory,
    tmp_path: Path,
    guarantee: str,
) -> None:
    # The output topic takes 100 kB; the big order's output is 200 kB, under the producer's
    # limit: the broker refuses its whole batch, every record of it reported refused. Only
    # the big order's outputs, sent alone, are refused again.
    topic = make_topic("refused-batch-in", partitions=3)
    _pad, topology, instance, _sent = run_with_a_refused_output(
        kafka_bootstrap,
        kafka_admin,
        topic,
        tmp_path,
        guarantee,
        stateful=False,
        pad_size=200_000,
        out_max_bytes=100_000,
    )
    app = topology.app_id
    try:
        assert_the_big_order_dead_lettered(kafka_bootstrap, app, topic)
        with TopicReader(kafka_bootstrap, f"{app}-out", config=COMMITTED) as out:
            # What came out, not how many: an at-least-once redo writes some twice.
            good = {f"o-{n}" for n in range(GOOD + 1) if n != 30}
            seen = order_ids(out.wait_for(lambda rs: set(order_ids(rs)) >= good, 30))
        assert set(seen) == good
    finally:
        assert instance.stop(30) is None
    assert instance.runtime.stats.refusals >= 2  # a suspect first, refused alone then
