"""Section ``cluster``: the throughput section's job on a three-node cluster, beside one node.

A local three-node cluster (``LocalCluster``: replication factor 3, min ISR 2) is started
for the section. The job of ``streams.bench.throughput`` (``topology/enrich.py``: dedup,
enrich, write) runs at-least-once and exactly-once on it and on the bench's one broker,
the four runs alternating over the rounds, each keeping its best. On the cluster every
topic the instance writes (outputs, the dedup store's changelog, the transaction log) has
three replicas and a write is acknowledged once two of them hold it (``acks=all``, the
runtime's producer setting on both): the rows show what replication costs on one machine,
where the three nodes share its two cores with the instance.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace

from streams.bench.core import BenchContext, Row, alternate, best, spread
from streams.bench.throughput import ENRICH, instance_rate, write_inputs
from streams.broker import LocalCluster, free_port
from streams.codec import AvroCodec
from streams.schemas import default_catalog

SECTION = "cluster"
ROUNDS = 2


def run(ctx: BenchContext) -> list[Row]:
    codec = AvroCodec(default_catalog())
    with tempfile.TemporaryDirectory(prefix="streams-bench-cluster-") as data_dir:
        cluster = LocalCluster(3, ports=[free_port() for _ in range(3)], data_dir=data_dir)
        started = cluster.up()
        on_cluster = replace(ctx, bootstrap=cluster.bootstrap, broker_pid=None, _topics=[])
        try:
            single_in, _, unique = write_inputs(ctx, codec)
            cluster_in, _, _ = write_inputs(on_cluster, codec)
            with tempfile.TemporaryDirectory(prefix="streams-bench-cluster-state-") as state:
                eos = ("--state-dir", state, "--guarantee", "exactly_once")
                alos = ("--state-dir", state)
                rounds = 1 if ctx.quick else ROUNDS
                rates = alternate(
                    rounds,
                    {
                        "alos1": lambda: instance_rate(ctx, ENRICH, single_in, unique, *alos).rate,
                        "alos3": lambda: (
                            instance_rate(on_cluster, ENRICH, cluster_in, unique, *alos).rate
                        ),
                        "eos1": lambda: instance_rate(ctx, ENRICH, single_in, unique, *eos).rate,
                        "eos3": lambda: (
                            instance_rate(on_cluster, ENRICH, cluster_in, unique, *eos).rate
                        ),
                    },
                )
        finally:
            on_cluster.cleanup()
            cluster.down()
    top = best(rates)
    note = f"{ctx.records:,} orders, best of {rounds} alternating runs"
    return [
        Row(SECTION, "three nodes: start to all in metadata", started.seconds, "s"),
        Row(
            SECTION,
            "streams run enrich, at-least-once, RF 3",
            top["alos3"],
            "rec/s",
            baseline=top["alos1"],
            note=f"vs one node (RF 1); {note}; 3 nodes {spread(rates['alos3'])}, "
            f"1 node {spread(rates['alos1'])}",
        ),
        Row(
            SECTION,
            "streams run enrich, exactly-once, RF 3",
            top["eos3"],
            "rec/s",
            baseline=top["eos1"],
            note=f"vs one node (RF 1); 3 nodes {spread(rates['eos3'])}, "
            f"1 node {spread(rates['eos1'])}",
        ),
    ]
