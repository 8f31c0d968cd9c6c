"""The cluster step of the demo: three nodes, a node killed mid-stream, nothing lost.

A local three-node cluster of its own (``LocalCluster``, in a temporary folder, stopped at
the end of the step) runs the dedup topology (``topology/dedup.py``) at-least-once. Every
topic the app creates takes the cluster's replication factor (3). Half the orders go in,
then the node leading most of the input's partitions is killed (SIGKILL) and the other
half goes in: the leaders move, the instance goes on. Raises RuntimeError unless every
order comes out and every topic of the app has three replicas.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence

from confluent_kafka import Message

from streams.broker import LocalCluster, free_ports
from streams.cluster import Cluster, admin_client, create_topic, topic_metadata
from streams.codec import AvroCodec
from streams.codec.headers import ID
from streams.demo.context import DemoContext
from streams.demo.running import running
from streams.examples import example_path
from streams.runtime import RuntimeConfig
from streams.runtime.topics import prepare_topics
from streams.schemas import default_catalog
from streams.testing.produce import produce_envelopes
from streams.testing.wait import TopicReader
from streams.topology import load_topology
from streams.topology.loader import import_file

NODES, PARTITIONS = 3, 3


def step_cluster(ctx: DemoContext, count: int = 2_000) -> None:
    """Three nodes -> orders deduplicated while the busiest node is killed; none lost."""
    with tempfile.TemporaryDirectory(prefix="streams-demo-cluster-") as folder:
        cluster = LocalCluster(NODES, ports=free_ports(NODES), data_dir=f"{folder}/cluster")
        up = cluster.up()
        try:
            text = _kill_a_node_mid_stream(cluster, folder, count)
        finally:
            cluster.down()
    ctx.say("cluster", f"{NODES} nodes up in {up.seconds:.1f} s; {text}")


def _kill_a_node_mid_stream(cluster: LocalCluster, folder: str, count: int) -> str:
    admin = admin_client(cluster.bootstrap)
    source = "orders"
    create_topic(admin, source, partitions=PARTITIONS)  # the cluster's replication factor
    topology = load_topology(example_path("dedup"), app_id="shop", params={"input": source})
    (output,) = topology.topics_written
    orders = list(import_file(example_path("orders")).sample_orders(count, seed=7))
    codec = AvroCodec(default_catalog())
    config = RuntimeConfig(bootstrap=cluster.bootstrap, state_dir=f"{folder}/state")
    prepare_topics(config.topics(admin), topology)  # the output, before its reader attaches
    half = count // 2
    with running(topology, config), TopicReader(cluster.bootstrap, output) as reader:
        produce_envelopes(cluster.bootstrap, source, orders[:half], codec)
        reader.wait_for(lambda rs: len(rs) >= half, 60, what="the first half")
        leaders = [p.leader for p in topic_metadata(admin, source).partitions.values()]
        victim = max(set(leaders), key=leaders.count)
        cluster.kill(victim)
        killed = time.monotonic()
        produce_envelopes(cluster.bootstrap, source, orders[half:], codec)
        # at-least-once: work redone after the partitions moved may write an order twice
        reader.wait_for(lambda rs: len(_ids(rs)) >= count, 120, what="every order")
        seconds = time.monotonic() - killed
    seen = _ids(reader.records)
    if len(seen) != count:
        raise RuntimeError(f"{count} orders in, {len(seen)} distinct out: some were lost")
    topics = Cluster(cluster.bootstrap).topic_metadata()
    made = {n: t for n, t in topics.items() if n.startswith("shop-")}
    replicas = {len(p.replicas) for t in made.values() for p in t.partitions.values()}
    if replicas != {NODES}:
        raise RuntimeError(f"the app's topics have {sorted(replicas)} replicas, not {NODES}")
    return (
        f"the app's {len(made)} topics ({', '.join(sorted(made))}) have {NODES} replicas "
        f"each; node {victim} killed mid-stream: {count:,} orders in, {count:,} out, none "
        f"lost ({seconds:.1f} s from the kill to the last, its leaders moved meanwhile)"
    )


def _ids(records: Sequence[Message]) -> set[str | bytes | None]:
    """The distinct envelope ids (``ce_id`` headers) of ``records``."""
    return {dict(r.headers() or [])[ID] for r in records}
