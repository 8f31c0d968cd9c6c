"""The topology step of ``make demo``: the orders example on the broker, end to end."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from streams.admin import admin_client, create_topic
from streams.codec import AvroCodec
from streams.runtime.config import RuntimeConfig
from streams.runtime.runner import Runtime
from streams.runtime.topics import prepare_topics
from streams.schemas import default_catalog
from streams.testing.produce import produce_envelopes
from streams.testing.wait import TopicReader
from streams.topology import load_topology
from streams.topology.loader import import_file

if TYPE_CHECKING:
    from streams.demo import DemoContext

ORDERS = Path(__file__).resolve().parents[2] / "topology" / "orders.py"


def step_topology(ctx: DemoContext, count: int = 300) -> None:
    """Produce ``count`` orders, run topology/orders.py until all are routed, count them."""
    source = ctx.topic("orders")
    admin = admin_client(ctx.bootstrap)
    create_topic(admin, source, partitions=4)
    topology = load_topology(ORDERS, app_id=f"demo-{ctx.run_id}-shop", params={"input": source})
    ctx.topics.extend(topology.topics_written)  # owned by the app: deleted after the demo
    codec = AvroCodec(default_catalog())
    produce_envelopes(ctx.bootstrap, source, import_file(ORDERS).sample_orders(count), codec)
    prepare_topics(admin, topology)

    runtime_log = logging.getLogger("streams.runtime")
    level = runtime_log.level
    runtime_log.setLevel(logging.WARNING)  # the tour prints its own line
    runtime = Runtime(topology, RuntimeConfig(bootstrap=ctx.bootstrap))
    worker = threading.Thread(target=runtime.run, daemon=True)
    start = time.perf_counter()
    worker.start()
    accepted_topic, rejected_topic = topology.topics_written
    readers = [TopicReader(ctx.bootstrap, t) for t in (accepted_topic, rejected_topic)]
    try:
        deadline = time.monotonic() + 60
        while sum(len(r.records) for r in readers) < count and time.monotonic() < deadline:
            for r in readers:
                r.poll(0.2)
        elapsed = time.perf_counter() - start
        reasons = Counter(
            codec.decode(m.value(), cast(Any, m.headers())).data["reason"]
            for m in readers[1].records
        )
    finally:
        for r in readers:
            r.close()
        runtime.stop()
        worker.join(30)
        runtime_log.setLevel(level)
    accepted, rejected = len(readers[0].records), len(readers[1].records)
    why = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()))
    ctx.say(
        "topology",
        f"`streams run topology/orders.py`: {count} orders -> {accepted} accepted, "
        f"{rejected} rejected ({why}) in {elapsed:.1f} s",
    )
    if accepted + rejected != count:
        raise RuntimeError(f"the orders topology routed {accepted + rejected} of {count} orders")
