"""Section ``restart``: how soon an instance's partitions are processed again when it is
killed with SIGKILL and restarted, or stopped for good, by group protocol and membership.

Two ``streams run topology/mirror.py`` instances of one app share a topic of 4
partitions and a state dir (each claims a numbered slot; the restart claims the killed
one's). Once each holds 2 partitions, one is killed (SIGKILL) and restarted, or stopped
(SIGTERM) and not restarted; ``RECORDS`` records are written across every partition
meanwhile. The figure is the seconds from the restart (or the stop) to the last output:
the survivor's share is done at once, the last output waits for the other's partitions.
The runtime's defaults otherwise: classic with a 10 s session, dynamic (the default) or
static (``--static-membership``: the slot's group.instance.id); the consumer protocol
(KIP-848) is never static (``streams.runtime.config.group_membership``) and its session is
the broker's (``group.consumer.session.timeout.ms``, 45 s by default). The note says
whether the survivor gave up partitions meanwhile (a rebalance).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from streams.bench.core import BenchContext, Row, drop_app_topics
from streams.cluster import Cluster, ClusterError
from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.examples import example_path
from streams.schemas import default_catalog
from streams.testing import TopicReader, TopologyProcess, produce_envelopes, wait_until
from streams.testing.topics import unique_topic_name

SECTION = "restart"
MIRROR = example_path("mirror")
PARTITIONS = 4
RECORDS = 400
CASES = {
    "classic, static member": ["-Xconsumer.group.protocol=classic", "--static-membership"],
    "classic, dynamic member": ["-Xconsumer.group.protocol=classic"],
    "consumer protocol (dynamic)": ["-Xconsumer.group.protocol=consumer"],
}


def _orders(first: int, count: int) -> list[Envelope]:
    return [
        Envelope.new(
            "order.placed",
            {
                "order_id": f"o-{n}",
                "customer_id": f"c-{n % 40}",
                "items": [],
                "total_cents": n,
                "currency": "EUR",
            },
            version=2,
            key=f"c-{n % 40}",
        )
        for n in range(first, first + count)
    ]


def _split_evenly(cluster: Cluster, app_id: str) -> bool:
    try:
        members = cluster.describe_group(app_id).members
    except ClusterError:  # a coordinator still loading past the deadline: asked again
        return False
    sizes = sorted(len(m.partitions) for m in members)
    return sizes == [PARTITIONS // 2, PARTITIONS // 2]


def seconds_to_last_output(ctx: BenchContext, args: list[str], *, stop: bool) -> tuple[float, bool]:
    """Seconds from a killed instance's restart (``stop``: from a clean stop, for good) to
    the last output, and whether the other instance had partitions revoked meanwhile."""
    source = ctx.topic("restart-in", partitions=PARTITIONS)
    app_id = unique_topic_name("bench-restart")
    codec = AvroCodec(default_catalog())
    with tempfile.TemporaryDirectory(prefix="streams-bench-restart-") as state:
        every = ["--state-dir", str(Path(state)), *args]

        def instance() -> TopologyProcess:
            settings = {"input": source}
            return TopologyProcess(
                MIRROR, ctx.bootstrap, app_id=app_id, settings=settings, args=every
            )

        killed, survivor = instance().start(), instance().start()
        procs = [killed, survivor]
        try:
            cluster = Cluster(ctx.bootstrap)
            wait_until(lambda: _split_evenly(cluster, app_id), 120, what="2 + 2 partitions")
            with TopicReader(ctx.bootstrap, f"{app_id}-mirror") as reader:
                produce_envelopes(ctx.bootstrap, source, _orders(0, RECORDS), codec)
                reader.wait_for(lambda rs: len(rs) >= RECORDS, 60, what="the first outputs")
                revokes = survivor.output().count("partitions revoked")
                if stop:
                    started = time.monotonic()
                    killed.stop()
                    produce_envelopes(ctx.bootstrap, source, _orders(RECORDS, RECORDS), codec)
                else:
                    killed.kill()
                    produce_envelopes(ctx.bootstrap, source, _orders(RECORDS, RECORDS), codec)
                    started = time.monotonic()
                    procs.append(instance().start())
                reader.wait_for(lambda rs: len(rs) >= 2 * RECORDS, 180, what="every output")
                seconds = time.monotonic() - started
            return seconds, survivor.output().count("partitions revoked") > revokes
        finally:
            for proc in procs:
                proc.close()
            drop_app_topics(ctx, app_id)


def run(ctx: BenchContext) -> list[Row]:
    rows = []
    for stop, what in (
        (False, "SIGKILL, restart to last output"),
        (True, "stop for good, to last output"),
    ):
        for name, args in CASES.items():
            seconds, revoked = seconds_to_last_output(ctx, args, stop=stop)
            note = (
                "the survivor's partitions revoked" if revoked else "no rebalance of the survivor"
            )
            rows.append(Row(SECTION, f"{what}: {name}", seconds, "s", note=note))
    return rows
