"""The refused-output step of the demo: an output the broker will not take.

Twenty orders go through dedup, then a step that attaches each customer's order history.
One customer's history is over a megabyte: its output is over librdkafka's
``message.max.bytes``. That order goes to the DLQ (``OutputRefusedError``), the other 19
come out, and the instance goes on: nothing stops, nothing is dropped as a duplicate. The
work since the last commit was done again without it (at-least-once): what was written
twice has the same envelope ids.
Then the history is trimmed ("the fix") and ``streams dlq replay --execute`` sends the
order back: it comes out, because its dedup id was undone with its output. Each wait is
60 s at most (the test kit's WaitTimeoutError when it runs out).
"""

from __future__ import annotations

import logging

from streams.cluster import Topics, admin_client, create_topic
from streams.codec import AvroCodec
from streams.demo.context import DemoContext
from streams.demo.running import running
from streams.dlq import execute_dlq_replay, plan_dlq_replay, read_dlq
from streams.envelope import Envelope
from streams.failures.policy import RetryPolicy
from streams.failures.topics import FailureTopics
from streams.runtime import RuntimeConfig
from streams.runtime.topics import prepare_topics
from streams.schemas import default_catalog
from streams.testing.produce import produce_envelopes
from streams.testing.wait import TopicReader, caught_up, wait_until
from streams.topology import Topology, TopologyBuilder, owned

T, V = "order.placed", 2
BIG_CUSTOMER = "c-7"


class History:
    """Attaches a customer's past orders as lines; customer ``BIG_CUSTOMER`` has 12,000 of
    them (about 1.2 MB), until ``trimmed`` to the last 10."""

    def __init__(self) -> None:
        self.trimmed = False

    def __call__(self, env: Envelope) -> Envelope:
        customer = env.data["customer_id"]
        count = 12_000 if customer == BIG_CUSTOMER else 3
        if self.trimmed:
            count = min(count, 10)
        lines = [
            {
                "sku": f"{customer}-past-order-{n:05d}-" + "x" * 80,
                "quantity": 1,
                "unit_price_cents": n,
            }
            for n in range(count)
        ]
        return env.follow(T, {**env.data, "items": lines}, version=V)


def _topology(app_id: str, source: str, history: History) -> Topology:
    builder = TopologyBuilder(app_id, description="each order once, with its customer's history")
    orders = builder.source(source, type=T, version=V, name="orders")
    orders.dedup(ttl=3600, by=lambda e: e.data["order_id"], name="once").map(
        history, name="history"
    ).to(owned("with-history"), type=T, version=V, name="with-history")
    return builder.build(default_catalog())


def step_refused(ctx: DemoContext) -> None:
    """An output too large for Kafka: its order to the DLQ, the others on; then replayed."""
    app_id = f"{ctx.prefix}-history"
    source = f"{app_id}-orders"  # under the app id, as an owned input: names carry it once
    admin = admin_client(ctx.bootstrap)
    create_topic(admin, source, partitions=2)
    history = History()
    topology = _topology(app_id, source, history)
    prepare_topics(Topics(admin), topology)
    dlq = FailureTopics.for_input(topology.app_id, source, RetryPolicy.no_retries()).dlq
    output = topology.topics_written[0]
    codec = AvroCodec(default_catalog())
    orders = [
        Envelope.new(
            T,
            {"order_id": f"o-{n}", "customer_id": f"c-{n}", "items": [], "total_cents": n},
            version=V,
            key=f"c-{n}",
        )
        for n in range(20)
    ]
    produce_envelopes(ctx.bootstrap, source, orders, codec)
    config = RuntimeConfig(bootstrap=ctx.bootstrap, commit_interval_s=0.5)
    # ERROR, not WARNING: the refusal and the dead letter each log one; the step says it.
    with (
        running(topology, config, quiet_below=logging.ERROR) as runtime,
        TopicReader(ctx.bootstrap, output) as out,
    ):
        wait_until(lambda: caught_up(ctx.bootstrap, topology.app_id, source), 60, what="orders")
        out.wait_for(lambda rs: len(rs) >= 19, 60, what="19 orders with their history")
        ids = [codec.decode(m.value(), m.headers()).id for m in out.records]
        letters = read_dlq(ctx.bootstrap, dlq)
        (letter,) = letters.letters
        failure = letter.failure
        if failure is None:
            raise RuntimeError(f"refused-output demo: a letter without error headers in {dlq}")
        ctx.say(
            "refused output",
            f"the history of {BIG_CUSTOMER} made an output over message.max.bytes: its order "
            f"to {dlq} ({failure.error_type}, step {failure.step}), the {len(set(ids))} "
            f"others out, the instance on; the work since the last commit was redone "
            f"without it: {len(ids) - len(set(ids))} outputs written twice, with the same "
            "envelope ids (a dedup downstream drops them)",
        )
        history.trimmed = True  # the fix, deployed
        execute_dlq_replay(ctx.bootstrap, plan_dlq_replay(letters))
        out.wait_for(lambda rs: len(rs) >= 20, 60, what="the replayed order")
        ctx.console.print(
            f"   history trimmed, `streams dlq replay {dlq} --execute`: o-7 came out "
            f"(its dedup id had been undone with its output; {runtime.duplicates} duplicates)",
            highlight=False,
        )
