"""Section ``retry_routing``: what failure routing costs a pipeline whose records succeed.

``topology/payments.py`` twice on the same input topic, in the same run, one
``streams run`` instance each: without a retry policy (``retry=none``: the runtime's plain
path) and with one (``1s, 1s``: every record admitted by the waiting room, outputs held
until the record succeeds, the input's retry tiers subscribed and paused-when-idle). No
record fails, so the figure is the happy path's overhead; throughput is watched from
outside through the output topic's end offsets, as in the ``pipeline`` section.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

from streams.bench.core import PARTITIONS, BenchContext, Row, stop_process, watch_outputs
from streams.bench.pipeline import produce_orders  # the same input as pipeline
from streams.cluster import Topics, delete_topics
from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.examples import example_path
from streams.failures.topics import FailureTopics
from streams.failures.waiting import waiting_store_name
from streams.runtime.topics import prepare_topics
from streams.schemas import default_catalog
from streams.state.changelog import changelog_topic
from streams.testing.topics import unique_topic_name
from streams.topology import load_topology
from streams.topology.loader import import_file

SECTION = "retry_routing"
PAYMENTS = example_path("payments")


def _payments(n: int) -> Iterator[Envelope]:
    payment = import_file(PAYMENTS).payment
    for i in range(n):
        yield payment(f"p-{i}", f"o-{i % 500}")


def _rate(ctx: BenchContext, source: str, retry: str) -> float:
    app_id = unique_topic_name("bench-pay")
    params = {"input": source, "retry": retry}
    topology = load_topology(PAYMENTS, app_id=app_id, params=params)
    prepare_topics(Topics(ctx.admin), topology)
    owned = list(topology.topics_written)
    if topology.retry is not None:
        owned += FailureTopics.for_input(app_id, source, topology.retry).all
        owned.append(changelog_topic(app_id, waiting_store_name(app_id, source)))
    cmd = [sys.executable, "-m", "streams", "run", str(PAYMENTS), "--app-id", app_id]
    cmd += ["--set", f"input={source}", "--set", f"retry={retry}"]
    cmd += ["--bootstrap", ctx.bootstrap, "--no-status"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        seconds = watch_outputs(
            ctx.bootstrap, list(topology.topics_written), ctx.records, partitions=PARTITIONS
        )
    finally:
        stop_process(proc)
        delete_topics(ctx.admin, owned)
    return ctx.records / seconds


def run(ctx: BenchContext) -> list[Row]:
    n = ctx.records
    source = ctx.topic("retry-routing-in", partitions=PARTITIONS)
    produce_orders(ctx.bootstrap, source, _payments(n), AvroCodec(default_catalog()))
    plain = _rate(ctx, source, "none")
    routed = _rate(ctx, source, "1s, 1s")
    note = f"{n:,} payments, {PARTITIONS} partitions, none fails"
    return [
        Row(SECTION, "payments pipeline, no retry policy", plain, "env/s", note=note),
        Row(
            SECTION,
            "payments pipeline, retry routing on",
            routed,
            "env/s",
            baseline=plain,
            note="baseline: the same pipeline without routing, same run",
        ),
    ]
