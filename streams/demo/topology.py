"""The topology step of the demo: the orders example (``topology/orders.py``) on the broker.

Produces 300 ``order.placed`` envelopes and one garbage record (dead-lettered by default)
to a 4-partition topic, runs the example topology
on a thread until every order is routed to ``<app>-accepted`` or ``<app>-rejected`` (60 s
at most), and counts the rejections by reason. Then pipes the same orders through the
``TestDriver`` (the same runtime on in-memory clients) and checks it predicted the broker's
outputs key for key. Raises RuntimeError when accepted plus rejected is not every order, or
when the driver and the broker disagree.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import Any, cast

from streams.codec import AvroCodec
from streams.demo.context import DemoContext
from streams.demo.running import quiet, running
from streams.envelope import Envelope
from streams.examples import example_path
from streams.failures.topics import dlq_topic
from streams.runtime import RuntimeConfig
from streams.schemas import default_catalog
from streams.testing import TestDriver
from streams.testing.produce import produce_envelopes, produce_records
from streams.testing.wait import TopicReader
from streams.topology.loader import import_file


def step_topology(ctx: DemoContext, count: int = 300) -> None:
    """Produce ``count`` orders, run topology/orders.py until all are routed, count them."""
    orders = example_path("orders")
    topology, source = ctx.example("orders", "shop", source="orders", partitions=4)
    codec = AvroCodec(default_catalog())
    placed = list(import_file(orders).sample_orders(count))
    produce_envelopes(ctx.bootstrap, source, placed, codec)
    # and one record that is no envelope: no policy needed, it goes to the DLQ
    produce_records(ctx.bootstrap, source, [(b"c-garbage", b"\x00garbage", None)])
    dlq = dlq_topic(topology.app_id, source)

    accepted_topic, rejected_topic = topology.topics_written
    start = time.perf_counter()
    with (
        # ERROR: the dead letter's WARNING is this step's own line below
        running(topology, RuntimeConfig(bootstrap=ctx.bootstrap), quiet_below=logging.ERROR),
        TopicReader(ctx.bootstrap, accepted_topic) as accepted_reader,
        TopicReader(ctx.bootstrap, rejected_topic) as rejected_reader,
        TopicReader(ctx.bootstrap, dlq) as dlq_reader,
    ):
        readers = (accepted_reader, rejected_reader)
        deadline = time.monotonic() + 60
        while (
            sum(len(r.records) for r in readers) < count or not dlq_reader.records
        ) and time.monotonic() < deadline:
            for r in (*readers, dlq_reader):
                r.poll(0.2)
        elapsed = time.perf_counter() - start
        on_kafka = {
            topic: [codec.decode(m.value(), cast(Any, m.headers())) for m in reader.records]
            for topic, reader in zip(topology.topics_written, readers, strict=True)
        }
        reasons = Counter(e.data["reason"] for e in on_kafka[rejected_topic])
    accepted, rejected = len(accepted_reader.records), len(rejected_reader.records)
    why = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()))
    ctx.say(
        "topology",
        f"`streams run topology/orders.py`: {count} orders -> {accepted} accepted, "
        f"{rejected} rejected ({why}) in {elapsed:.1f} s; the garbage record among them "
        f"went to {dlq} ({len(dlq_reader.records)}) without any retry policy",
    )
    if accepted + rejected != count:
        raise RuntimeError(f"the orders topology routed {accepted + rejected} of {count} orders")
    with quiet(), TestDriver(topology, partitions=4) as driver:
        driver.pipe(source, placed)
        predicted = {t: driver.read(t) for t in topology.topics_written}
    if {t: _by_key(e) for t, e in predicted.items()} != {
        t: _by_key(e) for t, e in on_kafka.items()
    }:
        raise RuntimeError("the TestDriver and the broker disagree on the orders topology")
    ctx.console.print(
        f"   the TestDriver (the same runtime on in-memory clients) predicted the same "
        f"{len(predicted[accepted_topic])} accepted and {len(predicted[rejected_topic])} "
        "rejected, key for key"
    )


def _by_key(envelopes: list[Envelope]) -> dict[str | None, list[tuple[Any, ...]]]:
    """What each output says, per key in order (ids are new on every run)."""
    out: dict[str | None, list[tuple[Any, ...]]] = {}
    for e in envelopes:
        out.setdefault(e.key, []).append((e.type, dict(e.data), e.causation_id))
    return out
