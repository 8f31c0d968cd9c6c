"""The timers step of the demo: a digest of each customer's orders every minute
(``topology/digest.py``).

Orders of a few customers over five minutes of event time, then one an hour on in each
partition. A processor keeps each customer's total in a store; a timer the processor
scheduled (``ctx.schedule``) writes the totals and empties the store whenever the
partition's event time crosses a minute. Raises RuntimeError unless every order is in
exactly one digest, as counted by hand.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from confluent_kafka import Message

from streams.codec import AvroCodec
from streams.demo.context import DemoContext
from streams.demo.running import running
from streams.examples import example_path
from streams.runtime import RuntimeConfig
from streams.schemas import default_catalog
from streams.testing.produce import produce_envelopes
from streams.testing.wait import TopicReader, wait_until
from streams.topology.loader import import_file
from streams.topology.partitioning import partition_for

PARTITIONS = 2
START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def step_timers(ctx: DemoContext, count: int = 300) -> None:
    """Five minutes of orders -> a digest per customer each minute, written by a timer."""
    topology, source = ctx.example("digest", "digest", source="digest-in", partitions=PARTITIONS)
    sample = import_file(example_path("orders")).sample_orders(count, customers=4, seed=5)
    orders = [replace(o, time=START + timedelta(seconds=i)) for i, o in enumerate(sample)]
    last = {partition_for((o.key or "").encode(), PARTITIONS): o for o in orders}
    orders += [replace(o, time=START + timedelta(hours=1)) for o in last.values()]
    codec = AvroCodec(default_catalog())
    produce_envelopes(ctx.bootstrap, source, orders, codec)
    plain = Counter(o.key for o in orders)

    def written(records: Sequence[Message]) -> Counter[str]:
        counts: Counter[str] = Counter()
        for m in records:
            data = codec.decode(m.value(), m.headers()).data
            counts[data["customer_id"]] += data["orders"]
        return counts

    (digests_topic,) = topology.topics_written
    with tempfile.TemporaryDirectory(prefix="streams-demo-timers-") as state_dir:
        config = RuntimeConfig(bootstrap=ctx.bootstrap, state_dir=state_dir)
        with running(topology, config) as runtime:
            wait_until(lambda: runtime.stats.consumed >= len(orders), 60, what="orders consumed")
    with TopicReader(ctx.bootstrap, digests_topic) as reader:
        reader.wait_for(lambda rs: written(rs).total() >= len(orders), 30, what="the digests")
        reader.poll(0.5)
        found, digests = written(reader.records), len(reader.records)
    if found != plain:
        raise RuntimeError(f"timers demo: digests hold {dict(found)}, expected {dict(plain)}")
    ctx.say(
        "timers",
        f"`streams run topology/digest.py`: {len(orders)} orders over {count // 60} minutes of "
        f"event time -> {digests} digests by a timer at each minute of event time; every "
        f"order in exactly one, as counted by hand",
    )
