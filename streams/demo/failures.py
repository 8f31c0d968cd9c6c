"""The failure-routing step of the demo: the payments example (``topology/payments.py``).

Five payments and one garbage record go to a 2-partition topic. A flaky payment times out
twice and settles from the last retry tier while the payment behind it on the same order
waits for it; a poison payment (a negative amount) and the garbage bytes land in the DLQ
without stalling anything. Then the topology runs again "fixed", and the DLQ replay of
``streams dlq replay --error-type ValueError --execute`` gets the poison payment settled.
Last, the topics the app made, with their partitions: what one run with retries costs.
The input is named under the app id, as an owned topic would be, so the names derived
from it carry the app id once (``<app>-payments-retry-1``).
Each wait is 60 s at most (the test kit's WaitTimeoutError when it runs out).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from confluent_kafka import Producer

from streams.cluster import Cluster
from streams.codec import AvroCodec
from streams.demo.context import DemoContext
from streams.demo.running import running
from streams.dlq import (
    DlqFilter,
    execute_dlq_replay,
    plan_dlq_replay,
    read_dlq,
    summarize,
)
from streams.examples import example_path
from streams.failures.topics import FailureTopics
from streams.runtime import Runtime, RuntimeConfig
from streams.schemas import default_catalog
from streams.testing.produce import produce_envelopes
from streams.testing.wait import TopicReader
from streams.topology import Topology, load_topology
from streams.topology.loader import import_file


def _wait(reader: TopicReader, done: Callable[[list[Any]], bool], what: str) -> None:
    reader.wait_for(lambda rs: done(list(rs)), 60, what=what)


def _run(topology: Topology, bootstrap: str) -> AbstractContextManager[Runtime]:
    # ERROR, not WARNING: every dead letter logs a warning, and the step prints its own lines.
    config = RuntimeConfig(bootstrap=bootstrap, commit_interval_s=0.5)
    return running(topology, config, quiet_below=logging.ERROR)


def _print_topics_made(ctx: DemoContext, app_id: str, source: str) -> None:
    """The topics named ``<app>-...`` but the input ``source``, with their partition
    counts, and the total."""
    made = {
        name: len(meta.partitions)
        for name, meta in Cluster(ctx.bootstrap).topic_metadata().items()
        if name.startswith(f"{app_id}-") and name != source
    }
    ctx.console.print(f"   topics of app {app_id} (its input {source} aside):", highlight=False)
    width = max(map(len, made), default=0)
    for name, partitions in sorted(made.items()):
        ctx.console.print(f"     {name:<{width}}  {partitions} partitions", highlight=False)
    ctx.console.print(f"   {len(made)} topics, {sum(made.values())} partitions", highlight=False)


def step_failures(ctx: DemoContext) -> None:
    """Retries recover a flaky payment; a poison one is dead-lettered, then replayed."""
    payments = example_path("payments")
    topology, source = ctx.example(
        "payments", "pay", source="pay-payments", partitions=2, retry="1s, 1s"
    )
    app_id = topology.app_id
    params = {"input": source, "retry": "1s, 1s"}
    topics = FailureTopics.for_input(app_id, source, topology.retry or topology.retry_policies[0])
    settled = topology.topics_written[0]

    payment = import_file(payments).payment
    codec = AvroCodec(default_catalog())
    envs = [
        payment("p-1", "o-1"),
        payment("flaky-2", "o-1"),  # times out twice, then settles
        payment("p-3", "o-1"),  # waits behind flaky-2
        payment("p-4", "o-2"),
        payment("p-5", "o-3", -500),  # refused every time: poison
    ]
    produce_envelopes(ctx.bootstrap, source, envs, codec)
    producer = Producer({"bootstrap.servers": ctx.bootstrap})
    producer.produce(source, key=b"o-4", value=b"\x07not an envelope")
    producer.flush(30)

    start = time.perf_counter()
    with (
        _run(topology, ctx.bootstrap) as runtime,
        TopicReader(ctx.bootstrap, settled) as out,
        TopicReader(ctx.bootstrap, topics.dlq) as dlq,
    ):
        _wait(out, lambda rs: len(rs) >= 4, "4 settled payments")
        _wait(dlq, lambda rs: len(rs) >= 2, "2 dead letters")
        counters = dict(runtime.stats.failures)
        order = [codec.decode(m.value(), m.headers()).data["payment_id"] for m in out.records]
    elapsed = time.perf_counter() - start
    summary = summarize(read_dlq(ctx.bootstrap, topics.dlq))
    errors = ", ".join(f"{name.rsplit('.', 1)[-1]} {n}" for name, n in summary.by_error.items())
    o1 = [p for p in order if p in {"p-1", "flaky-2", "p-3"}]
    ctx.say(
        "failures",
        f"flaky-2 timed out twice and settled from {topics.retries[-1]} "
        f"({counters.get('retried', 0)} retries, {counters.get('recovered', 0)} recovered; "
        f"order o-1 kept: {' < '.join(o1)}); {topics.dlq} holds {summary.total} ({errors}) "
        f"in {elapsed:.1f} s",
    )

    fixed = load_topology(payments, app_id=app_id, params={**params, "fixed": "1"})
    letters = read_dlq(ctx.bootstrap, topics.dlq)
    plan = plan_dlq_replay(letters, DlqFilter(error_type="ValueError"))
    with (
        _run(fixed, ctx.bootstrap),
        TopicReader(ctx.bootstrap, settled) as out,
    ):
        execute_dlq_replay(ctx.bootstrap, plan)
        _wait(out, lambda rs: len(rs) >= 5, "the replayed payment settled")
    after = summarize(read_dlq(ctx.bootstrap, topics.dlq))
    ctx.console.print(
        f"   after a fix, `streams dlq replay {topics.dlq} --error-type ValueError --execute` "
        f"sent {len(plan.items)} back: settled; `streams dlq list` shows {after.replayed} "
        f"replayed of {after.total}",
        highlight=False,
    )
    _print_topics_made(ctx, app_id, source)
