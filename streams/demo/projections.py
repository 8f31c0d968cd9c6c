"""The projections step of the demo: account balances folded from their events
(``topology/accounts.py``), read key by key from outside.

Events of a few dozen accounts (opened, deposited, withdrawn: three types on one topic)
are folded into the ``balances`` table by a runtime with a query port; every account is
then asked for the way ``streams query`` asks (the group's advertised endpoints, over
HTTP). Raises RuntimeError unless every answer equals the fold of the account's events
computed by hand.
"""

from __future__ import annotations

import tempfile

from streams.cluster import Cluster
from streams.codec import AvroCodec
from streams.demo.context import DemoContext
from streams.demo.running import running
from streams.examples import example_path
from streams.patterns.projections import caught_up
from streams.patterns.queries import query
from streams.runtime import RuntimeConfig
from streams.schemas import default_catalog
from streams.testing.produce import produce_envelopes
from streams.testing.wait import wait_until
from streams.topology.loader import import_file


def step_projections(ctx: DemoContext, count: int = 1_000) -> None:
    """Account events -> the balances projection, each account's queried by key."""
    topology, source = ctx.example("accounts", "accounts", source="accounts-in", partitions=2)
    accounts = import_file(example_path("accounts"))
    events = list(accounts.sample_events(count, accounts=30))
    produce_envelopes(ctx.bootstrap, source, events, AvroCodec(default_catalog()))
    expected = accounts.replayed(events)
    cluster = Cluster(ctx.bootstrap, 10)
    with tempfile.TemporaryDirectory(prefix="streams-demo-accounts-") as state_dir:
        config = RuntimeConfig(bootstrap=ctx.bootstrap, state_dir=state_dir, query_port=0)
        with running(topology, config):
            wait_until(lambda: caught_up(cluster, topology), 60, what="the balances")
            found = {key: query(cluster, topology.app_id, "balances", key) for key in expected}
    if found != expected:
        wrong = sorted(k for k in expected if found.get(k) != expected[k])
        raise RuntimeError(f"projections demo: balances of {wrong} differ from the fold")
    richest = max(expected.values(), key=lambda b: b["balance_cents"])
    ctx.say(
        "projections",
        f"`streams run topology/accounts.py --query-port`: {count} events of "
        f"{len(expected)} accounts folded into balances; each account asked for over HTTP "
        f"as `streams query` asks, all equal to the fold by hand (richest: "
        f"{richest['account_id']}, {richest['balance_cents'] / 100:,.2f} EUR)",
    )
