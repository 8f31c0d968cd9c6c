"""The windows step of the demo: revenue per customer per minute, and payments joined
with their orders (``topology/revenue.py``).

Orders of a few customers over six minutes of event time (the envelopes' ``time``), some
a few seconds out of order, three far behind. The example sums them per customer and
1-minute tumbling window with a 10 s grace and writes each window once, when it closes;
the three late orders go to the late topic. Payments come for some orders, a minute after
them, and a few two hours after (too late to meet their order within the hour). Raises
RuntimeError unless what comes out equals the plain computation: ``window_oracle``'s,
partition by partition, and the pairs of a payment and its order within the hour.
"""

from __future__ import annotations

import random
import tempfile
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from itertools import pairwise

from streams.cluster import admin_client, create_topic
from streams.codec import AvroCodec
from streams.demo.context import DemoContext
from streams.demo.running import running
from streams.envelope import Envelope
from streams.examples import example_path
from streams.runtime import RuntimeConfig
from streams.schemas import default_catalog
from streams.testing.produce import produce_envelopes
from streams.testing.wait import TopicReader, wait_until
from streams.testing.windows import window_oracle
from streams.topology import tumbling
from streams.topology.loader import import_file
from streams.topology.partitioning import partition_for

PARTITIONS = 2
START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def _orders(count: int) -> list[Envelope]:
    """``count`` orders one second apart; 1 in 6 up to 8 s back, the last three far back."""
    rng = random.Random(11)
    sample = import_file(example_path("orders")).sample_orders(count, customers=4, seed=11)
    out = []
    for i, env in enumerate(sample):
        back = rng.uniform(1, 8) if rng.random() < 1 / 6 else 0
        if i >= count - 3:
            back = 150  # minutes of stream time behind: late
        out.append(replace(env, time=START + timedelta(seconds=max(i - back, 0))))
    return out


def _payments(orders: list[Envelope]) -> tuple[list[Envelope], int]:
    """A payment for every fourth order, a minute after it (every 20th: two hours after),
    and how many of them meet their order within the hour."""
    out, met = [], 0
    for n, order in enumerate(orders[::4]):
        late = n % 5 == 4
        data = {
            "payment_id": f"p-{n}",
            "order_id": order.data["order_id"],
            "amount_cents": order.data["total_cents"],
            "currency": "EUR",
            "method": "CARD",
        }
        env = Envelope.new("payment.captured", data, key=order.data["order_id"])
        out.append(replace(env, time=order.time + timedelta(hours=2 if late else 0, minutes=1)))
        met += not late
    return sorted(out, key=lambda p: p.time), met  # each topic in time order


def step_windows(ctx: DemoContext, count: int = 360) -> None:
    """Six minutes of orders -> revenue per customer per closed minute; late ones aside;
    payments joined with their orders."""
    payments_topic = ctx.topic("revenue-payments")
    create_topic(admin_client(ctx.bootstrap), payments_topic, partitions=PARTITIONS)
    topology, source = ctx.example(
        "revenue", "revenue", source="revenue-in", partitions=PARTITIONS, payments=payments_topic
    )
    orders = _orders(count)
    codec = AvroCodec(default_catalog())
    produce_envelopes(ctx.bootstrap, source, orders, codec)
    payments, met = _payments(orders)
    produce_envelopes(ctx.bootstrap, payments_topic, payments, codec)
    spec = tumbling(60, grace=10)  # what the example declares
    closed: dict[tuple[str, int], tuple[int, int]] = {}
    late = 0
    for p in range(PARTITIONS):
        mine = [o for o in orders if partition_for((o.key or "").encode(), PARTITIONS) == p]
        oracle = window_oracle([(o.key or "", o.time, o) for o in mine], spec)
        closed |= {
            kw: (len(found), sum(o.data["total_cents"] for o in found))
            for kw, found in oracle.closed.items()
        }
        late += len(oracle.late)
    out_of_order = sum(1 for a, b in pairwise(orders) if b.time < a.time)

    revenue, late_topic, paid_topic = topology.topics_written
    with tempfile.TemporaryDirectory(prefix="streams-demo-windows-") as state_dir:
        config = RuntimeConfig(bootstrap=ctx.bootstrap, state_dir=state_dir)
        with running(topology, config) as runtime:
            total = 2 * count + len(payments)  # orders, again through the repartition, payments
            wait_until(lambda: runtime.stats.consumed >= total, 60, what="the input consumed")
    with TopicReader(ctx.bootstrap, paid_topic) as reader:
        reader.wait_for(lambda rs: len(rs) >= met, 30, what="the paid orders")
        reader.poll(0.5)  # one too many would be here by now
        paid = len(reader.records)
    with TopicReader(ctx.bootstrap, revenue) as reader:
        reader.wait_for(lambda rs: len(rs) >= len(closed), 30, what="the closed windows")
        reader.poll(0.5)
        found = [codec.decode(m.value(), m.headers()).data for m in reader.records]
    with TopicReader(ctx.bootstrap, late_topic) as reader:
        late_seen = len(reader.wait_for(lambda rs: len(rs) >= late, 30, what="the late orders"))
    got = {
        (d["customer_id"], d["window_start_ms"]): (d["orders"], d["revenue_cents"]) for d in found
    }
    if got != closed or len(found) != len(closed) or late_seen != late or paid != met:
        raise RuntimeError(
            f"windows demo: {len(found)} windows out ({len(got)} distinct), {late_seen} late, "
            f"{paid} paid; expected {len(closed)} windows, {late} late, {met} paid"
        )
    sample = max(found, key=lambda d: d["orders"])
    at = datetime.fromtimestamp(sample["window_start_ms"] / 1000, UTC).strftime("%H:%M")
    ctx.say(
        "windows",
        f"`streams run topology/revenue.py`: {count} orders over {count // 60} minutes of "
        f"event time ({out_of_order} out of order) -> {len(found)} closed windows, each "
        f"once, as computed by hand (e.g. {sample['customer_id']} at {at}: "
        f"{sample['orders']} orders, {sample['revenue_cents'] / 100:,.2f} EUR); "
        f"{late_seen} late orders to {late_topic.removeprefix(ctx.prefix + '-')}",
    )
    ctx.say(
        "join",
        f"{len(payments)} payments joined with their orders within the hour of event time "
        f"-> {paid} to {paid_topic.removeprefix(ctx.prefix + '-')}, as counted by hand "
        f"({len(payments) - paid} came two hours late: no order to meet)",
    )
