"""The tables step of the demo: orders joined with customer profiles (``topology/profiles.py``).

Profiles of a few customers go to a compacted topic, the app reads them into its table;
orders come in and leave with their customer's tier. Then some profiles change and one is
deleted (a record without a value): the next orders see that. Raises RuntimeError unless
every order saw its customer's profile as it was when the order came. Then every order is
reprocessed under a new app id (``streams replay --through``): the table is read first,
so each order meets today's profiles.
"""

from __future__ import annotations

import tempfile

from streams.cluster import Cluster, admin_client, create_topic
from streams.codec import AvroCodec
from streams.demo.context import DemoContext
from streams.demo.running import running
from streams.envelope import Envelope
from streams.replay import parse_position_spec, plan_replay
from streams.replay.positions import TopicSelection
from streams.replay.through import replay_through
from streams.runtime import RuntimeConfig
from streams.schemas import default_catalog
from streams.testing.produce import produce_envelopes, produce_records
from streams.testing.wait import TopicReader, caught_up, wait_until
from streams.topology import Topology

PARTITIONS = 2
CUSTOMERS = [f"c-{n:04d}" for n in range(8)]


def _profile(customer: str, tier: str) -> Envelope:
    data = {"customer_id": customer, "name": customer.upper(), "tier": tier, "limit_cents": 0}
    return Envelope.new("customer.profile", data, key=customer, source="crm")


def _orders(first: int) -> list[Envelope]:
    out = []
    for n, customer in enumerate(CUSTOMERS, start=first):
        data = {"order_id": f"o-{n}", "customer_id": customer, "items": [], "total_cents": n}
        out.append(
            Envelope.new("order.placed", {**data, "currency": "EUR"}, version=2, key=customer)
        )
    return out


def step_tables(ctx: DemoContext) -> None:
    """Profiles -> table; orders joined with it; profiles change -> the next orders see it."""
    customers = ctx.topic("customers")
    admin = admin_client(ctx.bootstrap)
    create_topic(admin, customers, partitions=PARTITIONS, config={"cleanup.policy": "compact"})
    topology, source = ctx.example(
        "profiles", "profiles", source="profiles-orders", partitions=PARTITIONS, customers=customers
    )
    codec = AvroCodec(default_catalog())
    app, enriched = topology.app_id, topology.topics_written[0]

    def read(topic: str) -> None:
        wait_until(lambda: caught_up(ctx.bootstrap, app, topic), 60, what=f"{topic} read")

    with tempfile.TemporaryDirectory(prefix="streams-demo-tables-") as state_dir:
        config = RuntimeConfig(bootstrap=ctx.bootstrap, state_dir=state_dir)
        with running(topology, config):
            produce_envelopes(
                ctx.bootstrap, customers, [_profile(c, "gold") for c in CUSTOMERS], codec
            )
            read(customers)  # the two topics are read side by side: one, then the other
            produce_envelopes(ctx.bootstrap, source, _orders(0), codec)
            read(source)
            changed = [_profile(c, "silver") for c in CUSTOMERS[:3]]
            produce_envelopes(ctx.bootstrap, customers, changed, codec)
            produce_records(ctx.bootstrap, customers, [(CUSTOMERS[-1].encode(), None, None)])
            read(customers)
            produce_envelopes(ctx.bootstrap, source, _orders(100), codec)
            with TopicReader(ctx.bootstrap, enriched) as reader:
                got = reader.wait_for(lambda rs: len(rs) >= 2 * len(CUSTOMERS), 30, what="orders")
    tiers = {
        (env := codec.decode(m.value(), m.headers())).data["order_id"]: env.data["tier"]
        for m in got
    }
    before = [tiers[f"o-{n}"] for n in range(len(CUSTOMERS))]
    after = [tiers[f"o-{100 + n}"] for n in range(len(CUSTOMERS))]
    want_after = ["silver"] * 3 + ["gold"] * (len(CUSTOMERS) - 4) + ["unknown"]
    if before != ["gold"] * len(CUSTOMERS) or after != want_after:
        raise RuntimeError(f"tables demo: tiers before {before}, after {after}")
    ctx.say(
        "tables",
        f"`streams run topology/profiles.py`: {len(CUSTOMERS)} profiles read into a table, "
        f"{len(CUSTOMERS)} orders joined (all gold); 3 profiles changed, 1 deleted -> the "
        f"next {len(CUSTOMERS)} orders: {after.count('silver')} silver, "
        f"{after.count('gold')} gold, {after.count('unknown')} unknown",
    )
    _rebuild(ctx, topology, source)


def _rebuild(ctx: DemoContext, topology: Topology, source: str) -> None:
    """Every order reprocessed under a new app id: the table read first, so each order
    meets today's profiles."""
    cluster, codec = Cluster(ctx.bootstrap), AvroCodec(default_catalog())
    plan = plan_replay(cluster, TopicSelection(source), parse_position_spec("earliest"), None)
    rebuild = topology.with_app_id(f"{topology.app_id}-rebuild")
    with tempfile.TemporaryDirectory(prefix="streams-demo-rebuild-") as state_dir:
        config = RuntimeConfig(bootstrap=ctx.bootstrap, state_dir=state_dir)
        done = replay_through(cluster, plan, rebuild, config=config)
    with TopicReader(ctx.bootstrap, rebuild.topics_written[0]) as reader:
        got = reader.wait_for(lambda rs: len(rs) >= done.processed, 30, what="rebuilt orders")
    tiers = sorted(codec.decode(m.value(), m.headers()).data["tier"] for m in got)
    today = ["silver"] * 3 + ["gold"] * (len(CUSTOMERS) - 4) + ["unknown"]
    table_records, written = sum(done.tables.values()), sum(done.outputs.values())
    if tiers != sorted(today * 2) or written != done.processed or not table_records:
        raise RuntimeError(f"tables demo: the rebuild did {done.as_dict()}, tiers {tiers}")
    ctx.say(
        "rebuild",
        f"`streams replay {source} --from earliest --through topology/profiles.py "
        f"--execute`: its table read first ({table_records} profile records), then the "
        f"{done.processed} orders, all {written} outputs acknowledged, each with today's profile",
    )
