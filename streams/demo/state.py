"""The state step of the demo: the dedup example (``topology/dedup.py``), then a restore.

Every order event is sent twice; the runtime passes each id once and counts the others.
The instance stops, its local state is deleted (a new machine), and a new instance
restores the dedup store from its changelog before reading on: the same events sent a
third time are all dropped. Each run waits 60 s at most for its records to be consumed;
raises RuntimeError unless the first run processed each id once, the second none, and the
output topic holds each id once.
"""

from __future__ import annotations

import tempfile
import time

from streams.codec import AvroCodec
from streams.demo.context import DemoContext
from streams.demo.running import running
from streams.envelope import Envelope
from streams.runtime import Runtime, RuntimeConfig
from streams.schemas import default_catalog
from streams.testing.produce import produce_envelopes
from streams.testing.wait import TopicReader, wait_until
from streams.topology import Topology


def orders_of(count: int) -> list[Envelope]:
    """``count`` placed orders of 20 customers, each a new id."""
    out = []
    for i in range(count):
        key = f"c-{i % 20:04d}"
        data = {"order_id": f"o-{i}", "customer_id": key, "items": [], "total_cents": i}
        out.append(Envelope.new("order.placed", {**data, "currency": "EUR"}, version=2, key=key))
    return out


def _run_until(topology: Topology, config: RuntimeConfig, consumed: int) -> tuple[Runtime, int]:
    """Run ``topology`` until it has consumed ``consumed`` records, then stop it; returns the
    runtime and how many store entries its partitions restored on assignment."""
    with running(topology, config) as runtime:
        wait_until(lambda: runtime.stats.consumed >= consumed, 60, what="the records consumed")
        state = runtime.state
        restored = sum(
            part.restore.applied
            for store in (state.stores.values() if state else ())
            for part in store.partitions.values()
            if part.restore is not None
        )
    return runtime, restored


def step_state(ctx: DemoContext, count: int = 200) -> None:
    """Each id twice → processed once; local state lost → restored; a third copy → dropped."""
    topology, source = ctx.example("dedup", "dedup", source="dedup-in", partitions=2)
    codec = AvroCodec(default_catalog())
    orders = orders_of(count)
    produce_envelopes(ctx.bootstrap, source, orders + orders, codec)

    with tempfile.TemporaryDirectory(prefix="streams-demo-state-") as state_dir:
        config = RuntimeConfig(bootstrap=ctx.bootstrap, state_dir=f"{state_dir}/a")
        first, _ = _run_until(topology, config, 2 * count)
        ctx.say(
            "dedup",
            f"`streams run topology/dedup.py`: {2 * count} events (each id twice) -> "
            f"{first.stats.produced} processed, {first.stats.consumed - first.stats.produced}"
            f" duplicates dropped; ids kept in {topology.changelog_topics['dedup']}",
        )
        produce_envelopes(ctx.bootstrap, source, orders, codec)  # a third copy of each
        # Another state dir: a new machine, nothing local; the store comes from Kafka.
        config = RuntimeConfig(bootstrap=ctx.bootstrap, state_dir=f"{state_dir}/b")
        started = time.perf_counter()
        second, restored = _run_until(topology, config, count)
    with TopicReader(ctx.bootstrap, topology.topics_written[0]) as reader:
        reader.wait_for(lambda rs: len(rs) >= count, 30, what="the unique events")
        reader.poll(0.5)
        written = len(reader.records)
    ctx.say(
        "state restore",
        f"local state deleted, new instance: {restored} ids restored from the changelog, "
        f"{count} more copies sent, {second.stats.produced} processed "
        f"({time.perf_counter() - started:.1f} s); output holds {written} events",
    )
    if first.stats.produced != count or second.stats.produced != 0 or written != count:
        raise RuntimeError(
            f"dedup demo: processed {first.stats.produced} then {second.stats.produced}, "
            f"output {written}, expected {count}, 0, {count}"
        )
