"""The concurrency step of the demo: a service call per order, one at a time, then 64 at once
(``topology/lookup.py``: an async step, 20 ms a call on average).

The same orders go through the topology as two apps: one order at a time, for a few
seconds (a call at a time caps it near 50 orders/s), then with 64 in flight, one at a
time per customer. Raises RuntimeError unless the second app wrote every order once,
each customer's in the order they came in.
"""

from __future__ import annotations

import tempfile
import time
from collections import defaultdict

from streams.codec import AvroCodec
from streams.demo.context import DemoContext
from streams.demo.running import running
from streams.envelope import Envelope
from streams.runtime import Runtime, RuntimeConfig
from streams.schemas import default_catalog
from streams.testing.produce import produce_envelopes
from streams.testing.wait import TopicReader, wait_until

CUSTOMERS = 200
ONE_AT_A_TIME_S = 3.0  # how long the app without concurrency runs: enough for its rate


def _orders(count: int) -> list[Envelope]:
    out = []
    for n in range(count):
        customer = f"c-{n % CUSTOMERS:04d}"
        data = {"order_id": f"o-{n}", "customer_id": customer, "items": [], "total_cents": n}
        env = Envelope.new(
            "order.placed", {**data, "currency": "EUR"}, version=2, key=customer, source="demo"
        )
        out.append(env)
    return out


def _timed(runtime: Runtime, count: int, limit_s: float) -> float:
    """Orders/s from the runtime's first output until ``count`` outputs (or ``limit_s``)."""
    wait_until(lambda: runtime.stats.produced > 0, 60, what="the first order enriched")
    first, start = runtime.stats.produced, time.monotonic()
    wait_until(
        lambda: runtime.stats.produced >= count or time.monotonic() - start >= limit_s,
        limit_s + 60,
        what=f"{count} orders enriched",
    )
    return (runtime.stats.produced - first) / (time.monotonic() - start)


def step_concurrency(ctx: DemoContext, count: int = 3_000) -> None:
    """Orders -> a 20 ms service call each: one at a time, then 64 in flight."""
    orders = _orders(count)
    codec = AvroCodec(default_catalog())
    rates: dict[int, float] = {}
    for concurrency in (1, 64):
        topology, source = ctx.example(
            "lookup",
            f"lookup-{concurrency}",
            source=f"lookup-in-{concurrency}",
            partitions=4,
            concurrency=str(concurrency),
        )
        produce_envelopes(ctx.bootstrap, source, orders, codec)
        with tempfile.TemporaryDirectory(prefix="streams-demo-lookup-") as state_dir:
            config = RuntimeConfig(bootstrap=ctx.bootstrap, state_dir=state_dir)
            with running(topology, config) as runtime:
                limit = ONE_AT_A_TIME_S if concurrency == 1 else 120.0
                rates[concurrency] = _timed(runtime, count, limit)
    (enriched,) = topology.topics_written
    with TopicReader(ctx.bootstrap, enriched) as reader:
        records = reader.wait_for(lambda rs: len(rs) >= count, 60, what="every order")
    by_customer: dict[str, list[int]] = defaultdict(list)
    for msg in sorted(records, key=lambda m: (m.partition(), m.offset())):
        data = codec.decode(msg.value(), msg.headers()).data
        by_customer[data["customer_id"]].append(int(data["order_id"][2:]))
    written = sorted(n for numbers in by_customer.values() for n in numbers)
    if written != list(range(count)):
        raise RuntimeError("concurrency demo: not every order was written exactly once")
    if any(numbers != sorted(numbers) for numbers in by_customer.values()):
        raise RuntimeError("concurrency demo: a customer's orders came out of order")
    ctx.say(
        "concurrency",
        f"`streams run topology/lookup.py`: a 20 ms service call per order, "
        f"{rates[1]:.0f} orders/s one at a time; {rates[64]:,.0f} orders/s with 64 in flight "
        f"(`--concurrency 64`, {rates[64] / rates[1]:.0f}x), {count} orders once each, "
        f"every customer's in the order they came",
    )
