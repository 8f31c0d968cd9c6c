"""Prometheus metrics of one runtime instance (the extra ``metrics``: ``prometheus_client``).

Built only when the runtime is given a metrics port (``RuntimeConfig.metrics_port``);
without one nothing here is imported and the record path is unchanged. With one, the
runtime asks ``RuntimeMetrics`` at build time for:

- ``measure``: one step put first in the chain (an intake). Per record it adds the
  record to its topic's consumed count and its outputs to their topics' produced counts,
  a few dictionary operations. One record in ``sample_every`` is timed through the whole
  chain and through each step (``steps``, a ``StepTimer`` the plan is built with: the
  plan's timed twin runs only the sampled record, the others run as without metrics), its
  timestamp noted as its partition's latest (the lag in seconds); its processing times,
  and its end-to-end latency (record timestamp to every write
  acknowledged: observed once the producer has nothing outstanding), go into histograms
  once per loop turn. Per-partition lag is read there too, at most once a second, on the
  runtime's thread (the consumer is not shared with the server's thread).
- ``timed(committer)``: a committer that times each commit (a transaction commit with
  exactly-once) and each rebalance's restore.
- ``count_skipped(on_skip)``: counts skipped records per topic.
- ``client_settings()``: librdkafka's statistics (``statistics.interval.ms``, default
  every 5 s, and ``stats_cb``), a few of which are exported.

Everything else is read at scrape time from what the runtime keeps anyway (``Stats``,
failure routing's counters, the stores, ``Health``) by a custom collector
(``RuntimeCollector``, a function per metric family), on the server's thread. Every
metric carries ``app_id`` (and ``instance_id`` when the instance has one).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from streams.coordinates import TP
from streams.observability.health import Health
from streams.pipeline.commit import Committer, CommitterWrapper
from streams.pipeline.failure import OnSkip
from streams.pipeline.record import Record
from streams.pipeline.stats import Stats
from streams.pipeline.step import Forward, Step
from streams.state import StateManager
from streams.topology.execution.step_timer import StepTimer
from streams.topology.policy import ProcessingFailure

SAMPLE_EVERY = 32
"""One record in this many is timed (a timer per record would cost more than the rest)."""

LAG_EVERY_S = 1.0
STATISTICS_INTERVAL_MS = 5_000

# Seconds: from a fast in-process step (50 µs) to a slow external call (10 s).
_PROCESSING_BUCKETS = (
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
    0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip
_LATENCY_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0,
)  # fmt: skip

_COMMIT_KINDS = {
    "OffsetCommitter": "offsets",
    "CheckpointCommitter": "checkpoint",
    "TransactionCommitter": "transaction",
}


class Stalled(Protocol):
    """One stalled partition (``streams.runtime.stall.StalledPartition``)."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def seconds(self) -> float: ...


class StallState(Protocol):
    """What the metrics read of the stall watch (``streams.runtime.stall.StallWatch``)."""

    def stalled_partitions(self) -> Sequence[Stalled]: ...


class Runtime(Protocol):
    """What the metrics read of a runtime (``streams.runtime.Runtime`` is one)."""

    @property
    def stats(self) -> Stats: ...
    @property
    def health(self) -> Health: ...
    @property
    def stall(self) -> StallState: ...
    @property
    def state(self) -> StateManager | None: ...
    @property
    def committer(self) -> Committer: ...
    @property
    def duplicates(self) -> int: ...
    @property
    def in_flight(self) -> int: ...
    @property
    def held(self) -> int: ...
    def outstanding_writes(self) -> int: ...
    def partition_lag(self) -> dict[TP, int] | None: ...


class RuntimeMetrics:
    """The metrics of one instance (see the module docstring)."""

    def __init__(
        self, app_id: str, instance_id: str | None = None, *, sample_every: int = SAMPLE_EVERY
    ) -> None:
        self.labels = {"app_id": app_id}
        if instance_id is not None:
            self.labels["instance_id"] = instance_id
        names = list(self.labels)
        self.registry = CollectorRegistry(auto_describe=False)
        self.processing = Histogram(
            "streams_processing_seconds",
            "Time of one record through the whole chain (decode, steps, stores, produce), "
            f"sampled: one record in {sample_every}.",
            [*names, "topic"],
            buckets=_PROCESSING_BUCKETS,
            registry=self.registry,
        )
        self.steps = StepTimer()
        self.step_seconds = Histogram(
            "streams_step_seconds",
            "Time of one step or sink on one record, without the steps it hands records to, "
            f"sampled: one record in {sample_every}.",
            [*names, "step"],
            buckets=_PROCESSING_BUCKETS,
            registry=self.registry,
        )
        self.latency = Histogram(
            "streams_end_to_end_latency_seconds",
            "From a record's timestamp to every output it caused acknowledged by the broker, "
            f"sampled: one record with outputs in {sample_every}.",
            names,
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.commit = Histogram(
            "streams_commit_seconds",
            "Time of each commit: flush outputs, then offsets, a checkpoint or a transaction.",
            [*names, "kind"],
            buckets=_PROCESSING_BUCKETS,
            registry=self.registry,
        )
        self.restore = Histogram(
            "streams_rebalance_assign_seconds",
            "Time of each assignment, stores restored before processing resumes.",
            names,
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.sample_every = sample_every
        self.consumed: dict[str, int] = {}
        self.produced: dict[str, int] = {}
        self.skipped: dict[str, int] = {}
        self.lag: dict[TP, tuple[int, float | None]] = {}
        self.restoring: dict[TP, tuple[int, int]] = {}  # changelog partition: (done, total)
        self.librdkafka: dict[str, dict[str, Any]] = {}  # client kind: its latest statistics
        self._runtime: Runtime | None = None
        self._lock = threading.Lock()  # one scrape at a time

    # -- build time ------------------------------------------------------------------------
    def client_settings(self, kind: str) -> dict[str, Any]:
        """librdkafka settings for a client of ``kind`` (``consumer``, ``producer``)."""

        def statistics(raw: str) -> None:
            self.librdkafka[kind] = json.loads(raw)

        return {"statistics.interval.ms": STATISTICS_INTERVAL_MS, "stats_cb": statistics}

    def measure(self, next: Step) -> Step:
        """The counting and sampling step (an ``Intake``)."""
        return Measure(next, self)

    def timed(self, committer: Committer) -> Committer:
        return TimedCommitter(committer, self)

    def count_skipped(self, on_skip: OnSkip | None) -> OnSkip:
        skipped = self.skipped

        def counted(failure: ProcessingFailure) -> None:
            topic = failure.record.topic
            skipped[topic] = skipped.get(topic, 0) + 1
            if on_skip is not None:
                on_skip(failure)

        return counted

    def restore_progress(self, topic: str, partition: int, done: int, total: int) -> None:
        """A ``RestoreProgress`` callback (chained after the terminal's bar)."""
        self.restoring[(topic, partition)] = (done, total)

    def watch(self, runtime: Runtime) -> None:
        """Read ``runtime`` at scrape time from now on, and follow its stores' restores."""
        self._runtime = runtime
        if runtime.state is not None:
            for store in runtime.state.stores.values():
                store.progress = chain_progress(store.progress, self.restore_progress)
        self.registry.register(RuntimeCollector(self, runtime))

    # -- scrape time -----------------------------------------------------------------------
    def exposition(self) -> tuple[bytes, str]:
        with self._lock:
            return generate_latest(self.registry), CONTENT_TYPE_LATEST


class Measure(Forward):
    """Counts per topic and samples timings (see the module docstring). Its ``poll`` runs
    once per loop turn, on the runtime's thread."""

    __slots__ = (
        "_acked",
        "_consumed",
        "_countdown",
        "_every",
        "_latest",
        "_metrics",
        "_next_lag",
        "_produced",
        "_steps",
        "_timed",
    )
    # ``_latest`` is keyed by the record's ``PartitionOffsets`` (one object per assigned
    # partition, hashed by identity): cheaper per record than building a (topic, partition)
    # tuple.

    def __init__(self, next: Step, metrics: RuntimeMetrics) -> None:
        super().__init__(next)
        self._metrics = metrics
        self._consumed = metrics.consumed
        self._produced = metrics.produced
        self._every = self._countdown = metrics.sample_every
        self._steps = metrics.steps
        self._timed: list[tuple[str, float]] = []
        self._acked: list[int] = []  # sampled timestamps (ms) whose outputs await acks
        self._latest: dict[Any, int | None] = {}  # PartitionOffsets: latest record's timestamp
        self._next_lag = 0.0

    def submit(self, record: Record) -> None:
        countdown = self._countdown - 1
        if countdown:
            self._countdown = countdown
            self.next.submit(record)
        else:
            self._countdown = self._every
            steps = self._steps
            steps.arm()
            start = time.perf_counter()
            try:
                self.next.submit(record)
            finally:
                steps.disarm()
            self._timed.append((record.topic, time.perf_counter() - start))
            if record.outputs and record.timestamp:
                self._acked.append(record.timestamp)
            # The age behind a lagging partition, from its latest sampled record: at most
            # ``sample_every`` records staler than the latest, for nothing per record.
            self._latest[record.offsets] = record.timestamp
        consumed, topic = self._consumed, record.topic
        consumed[topic] = consumed.get(topic, 0) + 1
        outputs = record.outputs
        if outputs:
            produced = self._produced
            for output in outputs:
                topic = output[0]
                produced[topic] = produced.get(topic, 0) + 1

    def poll(self) -> None:
        self.next.poll()
        metrics = self._metrics
        labels = metrics.labels
        if self._timed:
            timed, self._timed = self._timed, []
            processing = metrics.processing
            for topic, seconds in timed:
                processing.labels(**labels, topic=topic).observe(seconds)
            step_seconds = metrics.step_seconds
            for step, seconds in self._steps.take():
                step_seconds.labels(**labels, step=step).observe(seconds)
        runtime = metrics._runtime
        if runtime is None:
            return
        if self._acked and not runtime.outstanding_writes():
            acked, self._acked = self._acked, []
            now_ms = time.time() * 1000
            latency = metrics.latency.labels(**metrics.labels)
            for timestamp in acked:
                latency.observe(max(now_ms - timestamp, 0) / 1000)
        now = time.monotonic()
        if now >= self._next_lag:
            self._next_lag = now + LAG_EVERY_S
            self._read_lag(runtime)

    def _read_lag(self, runtime: Runtime) -> None:
        latest = {(po.topic, po.partition): ts for po, ts in self._latest.items() if po}
        lag = runtime.partition_lag()
        if lag is None:
            return
        now_ms = time.time() * 1000
        found: dict[TP, tuple[int, float | None]] = {}
        for tp, records in lag.items():
            seconds: float | None = 0.0
            if records > 0:
                ts = latest.get(tp)
                seconds = max(now_ms - ts, 0) / 1000 if ts else None
            found[tp] = (records, seconds)
        self._metrics.lag = found

    def revoked(self, partitions: Sequence[TP]) -> None:
        gone = set(partitions)
        self._latest = {
            po: ts
            for po, ts in self._latest.items()
            if po is not None and (po.topic, po.partition) not in gone
        }
        self.next.revoked(partitions)


class TimedCommitter(CommitterWrapper):
    """A ``Committer`` whose commits and assignments are timed; the rest passes through."""

    def __init__(self, inner: Committer, metrics: RuntimeMetrics) -> None:
        super().__init__(inner)
        kind = _COMMIT_KINDS.get(type(inner).__name__, type(inner).__name__)
        self._commit = metrics.commit.labels(**metrics.labels, kind=kind)
        self._assign = metrics.restore.labels(**metrics.labels)

    def assigned(self, partitions: Sequence[TP]) -> None:
        with self._assign.time():
            self.inner.assigned(partitions)

    def commit(self) -> None:
        with self._commit.time():
            self.inner.commit()


class RuntimeCollector(Collector):
    """Reads the runtime's own counters at scrape time (see the module docstring)."""

    def __init__(self, metrics: RuntimeMetrics, runtime: Runtime) -> None:
        self._metrics = metrics
        self._runtime = runtime

    def collect(self) -> Iterable[Metric]:
        m, runtime = self._metrics, self._runtime
        families = _Families(m.labels)
        yield from _records(families, m, runtime)
        yield from _rebalances(families, runtime.stats)
        yield from _transactions(families, runtime.committer)
        yield from _instance(families, runtime)
        yield from _stalls(families, runtime.stall)
        yield from _lag(families, m.lag)
        yield from _restores(families, m.restoring)
        yield from _stores(families, runtime.state)
        yield from _librdkafka(families, m.librdkafka)


class _Families:
    """Makes the metric families of one scrape, each labelled with the instance's labels
    (``app_id``, ``instance_id``) and, per sample, any more."""

    def __init__(self, labels: dict[str, str]) -> None:
        self.names = list(labels)
        self.values = list(labels.values())

    def counter(self, name: str, doc: str, value: float) -> CounterMetricFamily:
        """A counter with one sample, ``value``."""
        family = CounterMetricFamily(name, doc, labels=self.names)
        family.add_metric(self.values, value)
        return family

    def gauge(self, name: str, doc: str, value: float) -> GaugeMetricFamily:
        """A gauge with one sample, ``value``."""
        family = GaugeMetricFamily(name, doc, labels=self.names)
        family.add_metric(self.values, value)
        return family

    def per_topic(self, name: str, doc: str, counts: dict[str, int]) -> CounterMetricFamily:
        family = CounterMetricFamily(name, doc, labels=[*self.names, "topic"])
        for topic, count in sorted(counts.copy().items()):
            family.add_metric([*self.values, topic], count)
        return family

    def per_partition(self, name: str, doc: str, kind: str = "topic") -> GaugeMetricFamily:
        """A gauge with a sample per partition (of a topic, or of a ``kind``: a store)."""
        return GaugeMetricFamily(name, doc, labels=[*self.names, kind, "partition"])

    def add(self, family: Any, *labels: str, value: float) -> None:
        family.add_metric([*self.values, *labels], value)


def _records(families: _Families, m: RuntimeMetrics, runtime: Runtime) -> Iterator[Metric]:
    """What happened to the records: consumed, produced, skipped, retried, dead-lettered
    (per topic), recovered and dropped as duplicates."""
    failures = runtime.stats.failures
    per_topic = families.per_topic
    yield per_topic("streams_records_consumed", "Records consumed, per topic read.", m.consumed)
    yield per_topic("streams_records_produced", "Outputs produced, per topic written.", m.produced)
    yield per_topic(
        "streams_records_skipped", "Records a SKIP error policy let go, per topic.", m.skipped
    )
    yield per_topic(
        "streams_records_retried",
        "Failed records written to a retry tier, per input topic.",
        failures.get("retried_by_topic", {}),
    )
    yield per_topic(
        "streams_records_dead_lettered",
        "Records written to a dead-letter topic, per input topic.",
        failures.get("dead_lettered_by_topic", {}),
    )
    yield families.counter(
        "streams_records_recovered",
        "Records that succeeded on a retry.",
        failures.get("recovered", 0),
    )
    yield families.counter(
        "streams_records_duplicates", "Records dropped by dedup steps.", runtime.duplicates
    )


def _rebalances(families: _Families, stats: Stats) -> Iterator[Metric]:
    yield families.counter("streams_rebalances", "Partition assignments.", stats.rebalances)
    yield families.counter(
        "streams_rebalance_seconds",
        "Time spent in rebalance callbacks (restores, commits on revoke, lost).",
        stats.rebalance_seconds,
    )
    yield families.counter(
        "streams_partitions_lost",
        "Partitions taken away without a revoke (the session timed out).",
        stats.partitions_lost,
    )
    yield families.counter(
        "streams_refusals",
        "Times the work since the last commit was done again without records whose "
        "outputs the broker refused for their sake (they go to the DLQ).",
        stats.refusals,
    )


def _transactions(families: _Families, committer: Committer) -> Iterator[Metric]:
    """Exactly-once only: the transactions aborted (the committer's own count, read
    through its wrappers)."""
    aborts = getattr(committer, "aborts", None)
    if aborts is not None:
        yield families.counter("streams_transaction_aborts", "Transactions aborted.", aborts)


def _instance(families: _Families, runtime: Runtime) -> Iterator[Metric]:
    """What the instance holds now: partitions, readiness, records in hand."""
    health = runtime.health
    gauge = families.gauge
    yield gauge(
        "streams_assigned_partitions", "Input partitions assigned.", runtime.stats.partitions
    )
    yield gauge("streams_ready", "1 when /readyz answers 200.", 0 if health.unready() else 1)
    yield gauge("streams_restoring", "1 while stores are restored.", 1 if health.restoring else 0)
    yield gauge(
        "streams_records_in_flight",
        "Records started and not finished (awaiting async steps, with concurrency).",
        runtime.in_flight,
    )
    yield gauge(
        "streams_records_held",
        "Records an instance holds with concurrency: in flight, waiting for their key "
        "or a place, or finished ahead of one that is not.",
        runtime.held,
    )


def _stalls(families: _Families, stall: StallState) -> Iterator[Metric]:
    stalled = stall.stalled_partitions()
    yield families.gauge(
        "streams_stalled_partitions",
        "Partitions with lag whose position has not moved for stall_after_s.",
        len(stalled),
    )
    seconds = families.per_partition(
        "streams_partition_stalled_seconds",
        "Seconds since a stalled partition last moved (only stalled partitions).",
    )
    for s in stalled:
        families.add(seconds, s.topic, str(s.partition), value=s.seconds)
    yield seconds


def _lag(families: _Families, lag: dict[TP, tuple[int, float | None]]) -> Iterator[Metric]:
    records = families.per_partition(
        "streams_consumer_lag_records",
        "Records in the partition after the consumer's position (cached high watermark).",
    )
    seconds = families.per_partition(
        "streams_consumer_lag_seconds",
        "While records wait: the age of the partition's latest processed record "
        "(0 when caught up).",
    )
    for (topic, partition), (count, age) in sorted(lag.items()):
        families.add(records, topic, str(partition), value=count)
        if age is not None:
            families.add(seconds, topic, str(partition), value=age)
    yield records
    yield seconds


def _restores(families: _Families, restoring: dict[TP, tuple[int, int]]) -> Iterator[Metric]:
    remaining = families.per_partition(
        "streams_restore_remaining_records",
        "Changelog records still to restore, per changelog partition (0: done).",
    )
    restored = families.per_partition(
        "streams_restore_restored_records",
        "Changelog records restored by the latest restore, per changelog partition.",
    )
    for (topic, partition), (done, total) in sorted(restoring.copy().items()):
        families.add(remaining, topic, str(partition), value=max(total - done, 0))
        families.add(restored, topic, str(partition), value=done)
    yield remaining
    yield restored


def _stores(families: _Families, state: StateManager | None) -> Iterator[Metric]:
    entries = families.per_partition(
        "streams_store_entries", "Entries in a store partition (RocksDB: its estimate).", "store"
    )
    if state is not None:
        for name, store in sorted(state.stores.items()):
            for partition, part in sorted(dict(store.partitions).items()):
                try:
                    count = part.storage.estimated_count()
                except Exception:
                    continue
                families.add(entries, name, str(partition), value=count)
    yield entries


# librdkafka statistics exported: top-level fields (name, kind, help).
_CLIENT_FIELDS = (
    ("replyq", "gauge", "Operations (callbacks, events) waiting to be served by the client."),
    ("msg_cnt", "gauge", "Messages in the producer's queues."),
    ("tx", "counter", "Requests sent to brokers."),
    ("tx_bytes", "counter", "Bytes sent to brokers."),
    ("rx", "counter", "Responses received from brokers."),
    ("rx_bytes", "counter", "Bytes received from brokers."),
    ("txmsgs", "counter", "Messages sent to brokers."),
    ("rxmsgs", "counter", "Messages fetched from brokers."),
)


def _librdkafka(families: _Families, latest: dict[str, dict[str, Any]]) -> Iterator[Metric]:
    names, values = families.names, families.values
    labels = [*names, "client"]
    clients = sorted(latest.copy().items())
    for field, kind, doc in _CLIENT_FIELDS:
        name = f"streams_librdkafka_{field}"
        family: Any = (
            CounterMetricFamily(name, doc, labels=labels)
            if kind == "counter"
            else GaugeMetricFamily(name, doc, labels=labels)
        )
        for client, stats in clients:
            if field in stats:
                family.add_metric([*values, client], stats[field])
        yield family
    rtt = GaugeMetricFamily(
        "streams_librdkafka_broker_rtt_seconds",
        "Average round-trip time to each broker over the last statistics interval.",
        labels=[*labels, "broker"],
    )
    for client, stats in clients:
        for broker in stats.get("brokers", {}).values():
            avg = broker.get("rtt", {}).get("avg", 0)
            if broker.get("nodeid", -1) >= 0 and avg:
                rtt.add_metric([*values, client, str(broker.get("nodename"))], avg / 1e6)
    yield rtt


def chain_progress(
    first: Callable[[str, int, int, int], None] | None,
    then: Callable[[str, int, int, int], None],
) -> Callable[[str, int, int, int], None]:
    """A restore progress callback calling ``first`` (if any), then ``then``."""
    if first is None:
        return then

    def both(topic: str, partition: int, done: int, total: int) -> None:
        first(topic, partition, done, total)
        then(topic, partition, done, total)

    return both
