"""The replay step of the demo: a range of history, by time, copied into another topic.

Writes an hour of orders (one a minute, explicit timestamps) to a 4-partition topic, plans
the replay of the 20 minutes from 40 to 20 minutes ago, and copies the ``order.placed``
records of that range into a second topic, as ``streams replay ... --from 40m --to 20m
--type order.placed`` does. Raises RuntimeError when the orders are not acknowledged or
the range does not hold exactly the 20 records written in it.
"""

from __future__ import annotations

import time

from confluent_kafka import Producer

from streams.cluster import Cluster, admin_client, create_topic
from streams.demo.context import DemoContext
from streams.replay.copy import replay
from streams.replay.filters import RecordFilter
from streams.replay.plan import plan_replay
from streams.replay.positions import TopicSelection, parse_position_spec


def step_replay(ctx: DemoContext) -> None:
    """Plan a replay of 40m..20m ago and copy its ``order.placed`` records."""
    source, target = ctx.topic("replay-history"), ctx.topic("replay-copies")
    admin = admin_client(ctx.bootstrap)
    create_topic(admin, source, partitions=4)
    create_topic(admin, target, partitions=4)
    now = time.time_ns() // 1_000_000
    producer = Producer({"bootstrap.servers": ctx.bootstrap, "acks": "all", "linger.ms": 5})
    for minute in range(60, 0, -1):
        kind = b"order.placed" if minute % 3 else b"order.shipped"
        producer.produce(source, key=f"order-{minute % 8}", value=b"{}",
                         timestamp=now - minute * 60_000, headers=[("ce_type", kind)])  # fmt: skip
    if producer.flush(30):
        raise RuntimeError("demo: the orders were not acknowledged")
    cluster = Cluster(ctx.bootstrap)
    plan = plan_replay(cluster, TopicSelection(source), parse_position_spec("40m"),
                       parse_position_spec("20m"))  # fmt: skip
    ranges = ", ".join(f"p{r.partition}={r.start}..{r.end}" for r in plan.ranges)
    result = replay(cluster, plan, target, record_filter=RecordFilter.of(types=["order.placed"]))
    ctx.say("replay", f"{source} from 40m to 20m ago: plan {ranges} ({plan.size} records)")
    ctx.console.print(
        f"   copied {result.copied} order.placed of {result.read} records into {target}, "
        "all acknowledged (`streams replay ... --from 40m --to 20m --type order.placed`)"
    )
    if result.read != 20:
        raise RuntimeError(f"demo replay read {result.read} records, expected 20")
