"""The exactly-once step of the demo: the dedup example under ``--guarantee exactly_once``.

Every order event is sent twice; the instance's outputs, store changes and input offsets
commit in one transaction, and a read_committed reader sees each id once. Its commit
interval is set to 30 s, yet the outputs are readable as soon as it has read everything:
an instance that has caught up commits at once (``commit_idle_s``), so the last records
of a burst do not wait out the interval. Raises RuntimeError unless the reader sees each
id exactly once, long before the interval.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter

from streams.codec import AvroCodec
from streams.demo.context import DemoContext
from streams.demo.running import running
from streams.demo.state import orders_of
from streams.runtime import RuntimeConfig
from streams.schemas import default_catalog
from streams.testing.produce import produce_envelopes
from streams.testing.wait import TopicReader

INTERVAL_S = 30.0


def step_exactly_once(ctx: DemoContext, count: int = 200) -> None:
    """Each id twice, exactly-once → each id once to read_committed readers, at once."""
    topology, source = ctx.example("dedup", "eos", source="eos-in", partitions=2)
    codec = AvroCodec(default_catalog())
    orders = orders_of(count)
    produce_envelopes(ctx.bootstrap, source, orders + orders, codec)
    committed: dict[str, object] = {"isolation.level": "read_committed"}
    with (
        tempfile.TemporaryDirectory(prefix="streams-demo-eos-") as state_dir,
        TopicReader(ctx.bootstrap, topology.topics_written[0], config=committed) as reader,
    ):
        config = RuntimeConfig(
            bootstrap=ctx.bootstrap,
            processing_guarantee="exactly_once",
            commit_interval_s=INTERVAL_S,
            state_dir=state_dir,
        )
        started = time.perf_counter()
        with running(topology, config):
            records = reader.wait_for(lambda rs: len(rs) >= count, 30, what="the unique events")
            seconds = time.perf_counter() - started
    ids = Counter(codec.decode(m.value(), lazy=True).id for m in records)
    ctx.say(
        "exactly-once",
        f"`--guarantee exactly_once`: {2 * count} events (each id twice) -> {len(ids)} "
        f"outputs, each once, readable to read_committed readers {seconds:.1f} s after the "
        f"start (commit interval {INTERVAL_S:.0f} s: a caught-up instance commits at once)",
    )
    if len(ids) != count or max(ids.values()) != 1 or seconds >= INTERVAL_S:
        raise RuntimeError(
            f"exactly-once demo: {len(ids)} ids in {len(records)} outputs after {seconds:.1f} s,"
            f" expected {count} once each within {INTERVAL_S:.0f} s"
        )
