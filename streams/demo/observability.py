"""The observability step of the demo: what an operator scrapes while a topology runs.

Runs the orders example (``topology/orders.py``) with a metrics port (``streams run
--metrics-port``) over 200 orders and one garbage record, and reads its ``/metrics`` until
every record is counted: records consumed, produced per output, dead-lettered, the lag at
0, the sampled per-step times; ``/readyz`` is ready. Then a step that waits on a dead
service (it blocks until the demo lets it answer) stalls its partition: ``/readyz`` turns
503 and names it, and is ready again once the step returns. Without the ``metrics`` extra
the step says so and does nothing. Raises RuntimeError when a count is wrong or the
instance does not turn unready and ready again.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
import time

from streams.cluster import Topics, admin_client, create_topic
from streams.codec import AvroCodec
from streams.demo.context import DemoContext
from streams.demo.running import running
from streams.envelope import Envelope
from streams.examples import example_path
from streams.runtime import Runtime, RuntimeConfig
from streams.runtime.topics import prepare_topics
from streams.schemas import default_catalog
from streams.testing.metrics import Samples, by_label, get, sample, scrape
from streams.testing.produce import produce_envelopes, produce_records
from streams.testing.wait import wait_until
from streams.topology import TopologyBuilder, owned
from streams.topology.loader import import_file

ORDERS = 200


def step_observability(ctx: DemoContext) -> None:
    """Metrics of the orders topology, then a stalled partition seen by /readyz."""
    if importlib.util.find_spec("prometheus_client") is None:
        ctx.say("observability", "skipped: metrics need pip install 'streams[metrics]'")
        return
    _metrics(ctx)
    _stall(ctx)


def _metrics(ctx: DemoContext) -> None:
    topology, source = ctx.example("orders", "observed", source="observed-orders", partitions=2)
    app = topology.app_id
    codec = AvroCodec(default_catalog())
    orders = import_file(example_path("orders")).sample_orders(ORDERS)
    produce_envelopes(ctx.bootstrap, source, orders, codec)
    produce_records(ctx.bootstrap, source, [(b"c-garbage", b"\x00garbage", None)])
    config = RuntimeConfig(bootstrap=ctx.bootstrap, metrics_port=0)
    with running(topology, config, quiet_below=logging.ERROR) as runtime:
        port = wait_until(lambda: runtime.metrics_port, 60, what="the metrics port")

        def counted() -> Samples | None:
            samples = scrape(port)
            consumed = sample(samples, "streams_records_consumed_total", topic=source)
            lags = by_label(samples, "streams_consumer_lag_records", "partition")
            done = consumed == ORDERS + 1 and len(lags) == 2 and not any(lags.values())
            return samples if done else None

        samples = wait_until(counted, 60, what="every record counted and the lag at 0")
        ready = get(port, "/readyz")
    produced = by_label(samples, "streams_records_produced_total", "topic")
    dead = sample(samples, "streams_records_dead_lettered_total", topic=source)
    if sum(produced.values()) != ORDERS or dead != 1 or ready != (200, "ready\n"):
        raise RuntimeError(f"metrics: produced {produced}, dead-lettered {dead}, /readyz {ready}")
    steps = by_label(samples, "streams_step_seconds_sum", "step")
    counts = by_label(samples, "streams_step_seconds_count", "step")
    mean = ", ".join(f"{s} {steps[s] / counts[s] * 1e6:.0f} µs" for s in sorted(steps) if counts[s])
    outputs = ", ".join(
        f"{n:.0f} to {t.removeprefix(app + '-')}" for t, n in sorted(produced.items())
    )
    ctx.say(
        "observability",
        f"`streams run --metrics-port`: /metrics counted {ORDERS + 1} consumed, {outputs}, "
        "1 dead-lettered, lag 0 on both partitions; mean step times (sampled): "
        f"{mean}; /readyz {ready[0]}",
    )


def _stall(ctx: DemoContext) -> None:
    source = ctx.topic("stalled")
    admin = admin_client(ctx.bootstrap)
    create_topic(admin, source, partitions=1)
    app = f"{ctx.prefix}-stalled"
    answer = threading.Event()

    def lookup(env: Envelope) -> Envelope:
        if env.data["order_id"] == "o-2":
            answer.wait(60)  # a dead service, until the demo lets it answer
        return env

    b = TopologyBuilder(app)
    flow = b.source(source, type="order.placed", version=2).map(lookup, name="lookup")
    flow.to(owned("out"), type="order.placed", version=2)
    topology = b.build(default_catalog())
    prepare_topics(Topics(admin), topology)
    placed = [_order(n) for n in range(5)]
    produce_envelopes(ctx.bootstrap, source, placed, AvroCodec(default_catalog()))
    config = RuntimeConfig(bootstrap=ctx.bootstrap, metrics_port=0, stall_after_s=1.0)
    started = time.monotonic()
    try:
        # CRITICAL: the stall's WARNING is this step's own line below
        with running(topology, config, quiet_below=logging.CRITICAL) as runtime:
            port = wait_until(lambda: runtime.metrics_port, 60, what="the metrics port")
            stalled = wait_until(lambda: _stalled(port), 60, what="/readyz: a stalled partition")
            answer.set()
            wait_until(lambda: _ready_again(runtime, port), 60, what="/readyz ready again")
    finally:
        answer.set()
    ctx.say(
        "stall detection",
        f"a step waiting on a dead service held {source}[0]@2 for over --stall-after 1s: "
        f"/readyz 503 ({stalled.strip()}); ready again once it answered "
        f"({time.monotonic() - started:.1f} s in all)",
    )


def _order(n: int) -> Envelope:
    data = {"order_id": f"o-{n}", "customer_id": "c-1", "items": [], "total_cents": n}
    return Envelope.new("order.placed", {**data, "currency": "EUR"}, version=2, key="c-1")


def _stalled(port: int) -> str | None:
    """Why ``/readyz`` says not ready, once it is for a stalled partition (before the
    assignment it is not ready either, for that)."""
    status, text = get(port, "/readyz")
    return text if status == 503 and "stalled" in text else None


def _ready_again(runtime: Runtime, port: int) -> bool:
    return not runtime.stall.stalled_partitions() and get(port, "/readyz")[0] == 200
