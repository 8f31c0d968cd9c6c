"""The failure-routing step of ``make demo``: topology/payments.py on the broker.

A flaky payment recovers through the retry tiers (the payment behind it on the same order
waits for it), a poison payment and garbage bytes land in the DLQ without stalling
anything, then ``streams dlq replay`` after a "fix" gets the poison payment settled.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka import Producer

from streams.admin import admin_client, create_topic
from streams.codec import AvroCodec
from streams.failures.dlq import DlqFilter, execute_replay, plan_replay, read_dlq, summarize
from streams.failures.topics import FailureTopics
from streams.failures.waiting import waiting_store_name
from streams.runtime.config import RuntimeConfig
from streams.runtime.runner import Runtime
from streams.runtime.topics import prepare_topics
from streams.schemas import default_catalog
from streams.testing.produce import produce_envelopes
from streams.testing.wait import TopicReader
from streams.topology import Topology, load_topology
from streams.topology.loader import import_file

if TYPE_CHECKING:
    from streams.demo import DemoContext

PAYMENTS = Path(__file__).resolve().parents[2] / "topology" / "payments.py"


@contextmanager
def _running(topology: Topology, bootstrap: str) -> Iterator[Runtime]:
    """The runtime on a thread, quiet below WARNING, stopped on exit."""
    loggers = [
        logging.getLogger(n) for n in ("streams.runtime", "streams.state", "streams.failures")
    ]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)  # the tour prints its own lines (dead letters warn)
    runtime = Runtime(topology, RuntimeConfig(bootstrap=bootstrap, commit_interval_s=0.5))
    worker = threading.Thread(target=runtime.run, daemon=True)
    worker.start()
    try:
        yield runtime
    finally:
        runtime.stop()
        worker.join(30)
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def _wait(reader: TopicReader, done: Callable[[list[Any]], bool], what: str) -> None:
    reader.wait_for(lambda rs: done(list(rs)), 60, what=what)


def step_failures(ctx: DemoContext) -> None:
    """Retries recover a flaky payment; a poison one is dead-lettered, then replayed."""
    source = ctx.topic("payments")
    admin = admin_client(ctx.bootstrap)
    create_topic(admin, source, partitions=2)
    app_id = f"demo-{ctx.run_id}-pay"
    params = {"input": source, "retry": "1s, 1s"}
    topology = load_topology(PAYMENTS, app_id=app_id, params=params)
    topics = FailureTopics.for_input(app_id, source, topology.retry or topology.retry_policies[0])
    settled = topology.topics_written[0]
    ctx.topics.extend([settled, *topics.all, f"{app_id}-{waiting_store_name(source)}-changelog"])
    prepare_topics(admin, topology)

    payment = import_file(PAYMENTS).payment
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
        _running(topology, ctx.bootstrap) as runtime,
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

    fixed = load_topology(PAYMENTS, app_id=app_id, params={**params, "fixed": "1"})
    plan = plan_replay(read_dlq(ctx.bootstrap, topics.dlq), DlqFilter(error_type="ValueError"))
    with (
        _running(fixed, ctx.bootstrap),
        TopicReader(ctx.bootstrap, settled) as out,
    ):
        execute_replay(ctx.bootstrap, plan)
        _wait(out, lambda rs: len(rs) >= 5, "the replayed payment settled")
    after = summarize(read_dlq(ctx.bootstrap, topics.dlq))
    ctx.console.print(
        f"   after a fix, `streams dlq replay {topics.dlq} --error-type ValueError --execute` "
        f"sent {len(plan.items)} back: settled; `streams dlq list` shows {after.replayed} "
        f"replayed of {after.total}",
        highlight=False,
    )
