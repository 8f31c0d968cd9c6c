"""Where a record's time goes inside the runtime: µs per record of each stage.

One instance of a topology runs in this process, turn by turn, over an input topic that
is already full, with a timer around each stage; the table is the time per consumed
record. The bench reaches into the runtime on purpose (timers wrapped around its parts):
nothing of this runs outside the bench.

- consume: taking batches from the consumer;
- decode: the codec reading envelopes;
- state: dedup lookups and writes (the store transaction);
- user steps: the plan's own work (the topology's functions, routing between steps);
- encode: the codec writing outputs;
- produce: handing outputs to the producer;
- commit: the committer (checkpoints, offsets);
- bookkeeping: the rest of each turn (records, tracking, the failure policy, the timers'
  own cost).
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from streams.bench.core import BenchContext, Row, drop_app_topics
from streams.cluster import Topics
from streams.codec import AvroCodec
from streams.runtime import Runtime, RuntimeConfig
from streams.runtime.topics import prepare_topics
from streams.schemas import default_catalog
from streams.state.dedup import Dedup
from streams.testing.topics import unique_topic_name
from streams.topology import load_topology

SECTION = "stages"
F = TypeVar("F", bound=Callable[..., Any])


class Timers:
    """Nanoseconds spent per stage."""

    def __init__(self) -> None:
        self.ns: Counter[str] = Counter()

    def wrap(self, stage: str, fn: F) -> F:
        ns, clock = self.ns, time.perf_counter_ns

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                ns[stage] += clock() - start

        return timed  # type: ignore[return-value]


class _TimedCodec:
    def __init__(self, codec: AvroCodec, timers: Timers) -> None:
        self.encode = timers.wrap("encode", codec.encode)
        self.decode = timers.wrap("decode", codec.decode)
        self.peek_type = codec.peek_type


def profile(ctx: BenchContext, path: Path, source: str, count: int, state_dir: str) -> Timers:
    """Run ``path`` on ``source`` until ``count`` records are consumed, timing each stage."""
    timers = Timers()
    app_id = unique_topic_name("bench-stages")
    topology = load_topology(path, app_id=app_id, params={"input": source})
    prepare_topics(Topics(ctx.admin), topology)
    first = Dedup.first
    Dedup.first = timers.wrap("state", first)  # type: ignore[method-assign]
    try:
        runtime = Runtime(
            topology,
            RuntimeConfig(ctx.bootstrap, state_dir=state_dir),
            codec=_TimedCodec(AvroCodec(default_catalog()), timers),
        )
    finally:
        Dedup.first = first  # type: ignore[method-assign]
    plan = runtime._chain.attempt.plan
    for topic, entry in list(plan.entries.items()):
        plan.entries[topic] = timers.wrap("plan", entry)
    sink, committer = runtime._sink, runtime._committer
    sink.send_all = timers.wrap("produce", sink.send_all)  # type: ignore[method-assign]
    committer.commit = timers.wrap("commit", committer.commit)  # type: ignore[method-assign]
    runtime._next_batch = timers.wrap("consume", runtime._next_batch)  # type: ignore[method-assign]
    turn = timers.wrap("turn", runtime.turn)
    runtime.start()
    try:
        while runtime.stats.consumed < count:
            turn()
    finally:
        runtime.close()
        timers.ns["records"] = runtime.stats.consumed
        drop_app_topics(ctx, app_id)
    return timers


def table(timers: Timers) -> dict[str, float]:
    """µs per record of each stage (see the module docstring)."""
    ns, n = timers.ns, max(timers.ns["records"], 1)
    user = ns["plan"] - ns["encode"] - ns["state"]
    accounted = ns["consume"] + ns["decode"] + ns["plan"] + ns["produce"] + ns["commit"]
    stages = {
        "consume": ns["consume"],
        "decode": ns["decode"],
        "state": ns["state"],
        "user steps": user,
        "encode": ns["encode"],
        "produce": ns["produce"],
        "commit": ns["commit"],
        "bookkeeping": ns["turn"] - accounted,
    }
    return {name: value / n / 1000 for name, value in stages.items()}


def run(ctx: BenchContext, path: Path, source: str, count: int) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="streams-bench-stages-") as state_dir:
        per_stage = table(profile(ctx, path, source, count, state_dir))
    total = sum(per_stage.values())
    rows = [
        Row(SECTION, f"{name}", us, "µs/rec", note=f"{us / total:.0%} of {total:.1f} µs")
        for name, us in per_stage.items()
    ]
    return rows
