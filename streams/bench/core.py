"""Shared pieces of the benchmark: the context each section gets, and result rows."""

from __future__ import annotations

import multiprocessing
import os
import resource
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from streams.cluster import (
    Cluster,
    Topics,
    admin_client,
    create_topic,
    delete_app_topics,
    delete_topics,
)
from streams.cluster.groups import GroupInfo, describe_group
from streams.config import bounded_prefetch
from streams.runtime import RuntimeConfig
from streams.runtime.config import PREFETCH_KBYTES
from streams.runtime.topics import prepare_topics
from streams.testing.topics import unique_topic_name
from streams.topology import load_topology

if TYPE_CHECKING:
    from _typeshed import SupportsRichComparison

PARTITIONS = 4
Relay = Callable[[str, str, str], None]
"""A bare loop: ``relay(bootstrap, source, target)`` runs forever in a forked process."""
K = TypeVar("K")
T = TypeVar("T")
C = TypeVar("C", bound="SupportsRichComparison")


@dataclass(frozen=True)
class Row:
    """One figure. ``baseline`` is the matching bare-client figure, for a ratio."""

    section: str
    name: str
    value: float
    unit: str
    baseline: float | None = None
    target: float | None = None  # the ratio the issue asks for, shown beside it
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.baseline in (None, 0):
            return None
        return self.value / self.baseline


@dataclass
class BenchContext:
    bootstrap: str
    records: int = 200_000
    quick: bool = False
    # The local broker's process, when the bench started it: its CPU in a run's window is
    # measured too (on 2 cores it shares the machine with what is measured).
    broker_pid: int | None = None
    _topics: list[str] = field(default_factory=list)

    @property
    def admin(self) -> AdminClient:
        return admin_client(self.bootstrap)

    def topic(self, hint: str, partitions: int = 4) -> str:
        name = unique_topic_name(f"bench-{hint}")
        create_topic(self.admin, name, partitions=partitions)
        self._topics.append(name)
        return name

    def cleanup(self) -> None:
        delete_topics(self.admin, self._topics)
        self._topics.clear()


def alternate(rounds: int, runs: Mapping[K, Callable[[], T]]) -> dict[K, list[T]]:
    """What each run gave (a rate, a ``Measured``) over ``rounds`` rounds, the runs
    alternating within a round: on a machine shared with the broker one run against one
    moves by 10-20%, and a load spike then hits every run alike rather than one side of a
    ratio."""
    results: dict[K, list[T]] = {key: [] for key in runs}
    for _round in range(rounds):
        for key, run in runs.items():
            results[key].append(run())
    return results


def best(rates: Mapping[K, Sequence[C]]) -> dict[K, C]:
    """The highest of each run's rates (what ``alternate`` returns; a ``Measured`` is
    ordered by its rate)."""
    return {key: max(each) for key, each in rates.items()}


def best_of(rounds: int, runs: Mapping[K, Callable[[], float]]) -> dict[K, float]:
    """The highest rate each run gave over ``rounds`` alternating rounds (``alternate``)."""
    return best(alternate(rounds, runs))


def spread(figures: Sequence[float], unit: str = "") -> str:
    """Every run's figure, for a row's note: rates as ``runs 31.2k 35.1k 33.0k``; a figure
    with a ``unit`` as ``runs 28.4 30.1 µs``."""
    if unit:
        return "runs " + " ".join(f"{figure:.1f}" for figure in figures) + f" {unit}"
    return "runs " + " ".join(f"{rate / 1000:.1f}k" for rate in figures)


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _end_offsets(consumer: Consumer, topics: list[str], partitions: int) -> int:
    """Records written to ``topics`` so far (sum of end offsets); -1 when not readable yet."""
    total = 0
    for topic in topics:
        for p in range(partitions):
            try:
                _low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5)
            except KafkaException:  # transient right after creation (no leader yet): ask again
                return -1
            total += max(high, 0)
    return total


@dataclass(frozen=True)
class Window:
    """What ``watch`` saw: the seconds from the first output to the last, and the CPU the
    watched process (its children included) and the broker used in them (all threads,
    user and system; 0 when not watched); ``outputs``: the outputs written in it (all of
    them from the first output; those written after it started, for a settled window).
    ``settled``: the same from the moment the group settled (``Settle``), and ``settling``
    the seconds from the watch's start to that moment, when a group was watched."""

    seconds: float
    cpu: float = 0.0
    broker_cpu: float = 0.0
    outputs: int = 0
    settled: Window | None = None
    settling: float = 0.0


@dataclass(frozen=True)
class Settle:
    """A consumer group to watch until it has settled: its ``members`` (as many as
    expected) each hold partitions, and together they hold every partition of
    ``topics``. The group of a ``streams run`` app is its app id."""

    group: str
    members: int
    topics: tuple[str, ...]

    def settled(self, info: GroupInfo, partitions: int) -> bool:
        held = {tp for member in info.members for tp in member.partitions}
        every = {(topic, p) for topic in self.topics for p in range(partitions)}
        return (
            len(info.members) == self.members
            and all(member.partitions for member in info.members)
            and every <= held
        )


SETTLE_POLL_S = 0.1
"""How often ``watch`` describes the group it waits to settle (a describe costs the
coordinator a request: not at the end-offset polling rate)."""


@dataclass(frozen=True, order=True)
class Measured:
    """One run of a loop or an instance: input records/s, peak RSS in MB (its largest
    process), µs of its CPU per input record, and the cores it and the broker kept busy
    (CPU seconds over the window's seconds). Ordered by rate, its first field: the best of
    several runs is the fastest (``best``). ``settled``: the same over the window from the
    moment the group settled (``Settle``), when one was watched, and ``settling`` the
    seconds the group took to settle from the start; ``seconds``: the window's length."""

    rate: float
    rss: float
    cpu_us: float
    cores: float
    broker_cores: float
    settled: Measured | None = field(default=None, compare=False)
    settling: float = field(default=0.0, compare=False)
    seconds: float = field(default=0.0, compare=False)


CPU_NOTE = "the process's own CPU time (every thread) per input record, first output to last"
"""What a row of ``Measured.cpu_us`` says it is, in its note."""


def _processes() -> dict[int, tuple[int, float]]:
    """Every process's parent pid and CPU seconds so far (user + system, every thread)."""
    tick = os.sysconf("SC_CLK_TCK")
    found: dict[int, tuple[int, float]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # exited since the listing
            continue
        # After the command name in parentheses: state, ppid, ..., utime and stime are
        # the 12th and 13th fields, in clock ticks.
        fields = text.rpartition(")")[2].split()
        found[int(stat.parent.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    return found


def _family(pid: int, processes: Mapping[int, tuple[int, float]] | None = None) -> list[int]:
    """Process ``pid`` and its descendants (``streams run --instances N`` works in N
    children). Found by parent pid in every process's stat: this kernel has no
    /proc/<pid>/task/<tid>/children."""
    parents = _processes() if processes is None else processes
    pids = [pid]
    for member in pids:  # grows while read: children of children
        pids += (child for child, (parent, _cpu) in parents.items() if parent == member)
    return pids


def cpu_seconds(pid: int) -> float:
    """User + system CPU time process ``pid`` and its descendants (every thread of each)
    have used so far; the CPU of a descendant that exits is not counted."""
    processes = _processes()
    return sum(processes[member][1] for member in _family(pid, processes) if member in processes)


def watch(
    bootstrap: str,
    topics: list[str],
    target: int,
    *,
    partitions: int,
    timeout: float = 600,
    pid: int | None = None,
    broker_pid: int | None = None,
    settle: Settle | None = None,
) -> Window:
    """The time from the first output record written to ``target`` records readable, seen
    via end offsets, and the CPU process ``pid`` (its children too) and the broker
    (``broker_pid``) used in it.

    Reading end offsets costs the pipeline under test nothing, unlike consuming its output.
    The first output counts once written (read_uncommitted), the last once a downstream
    reader may read it (read_committed): an exactly-once instance's outputs are readable
    only when their transaction commits, so a clock started at its first readable output
    would start a commit interval late, with that much of the work already done (it read
    0.94-1.06 of at-least-once so, where a reader timing the whole run saw 0.69-0.88).
    The CPU counts from the first output, not from the first record read: it leaves out
    start-up (imports, the group join) and the few ms before the first output is seen.

    With ``settle``, a second window in the same run (``Window.settled``): from the first
    moment the group has settled (described every ``SETTLE_POLL_S``) to the same end, its
    outputs those written after that moment, its CPU from then. Instances started at once
    rebalance as each joins (a first instance takes every partition, a cooperative
    rebalance then moves some to the next): the settled window leaves that out. A group
    that has not settled when the last output is readable raises ``RuntimeError``.
    """

    def watcher(isolation: str) -> Consumer:
        settings = {"group.id": "bench-watch", "isolation.level": isolation}
        return Consumer({"bootstrap.servers": bootstrap, **settings})

    def cpu() -> tuple[float, float]:
        return (cpu_seconds(pid) if pid else 0.0, cpu_seconds(broker_pid) if broker_pid else 0.0)

    def since(start: float, at: tuple[float, float], now: float, outputs: int) -> Window:
        (used, broker), (used0, broker0) = cpu(), at
        return Window(max(now - start, 1e-6), used - used0, broker - broker0, outputs)

    cluster = Cluster(bootstrap, timeout=10) if settle else None
    written, readable = watcher("read_uncommitted"), watcher("read_committed")
    try:
        began = time.perf_counter()
        deadline = time.monotonic() + timeout
        first: float | None = None
        at_first = (0.0, 0.0)
        settled: tuple[float, tuple[float, float], int] | None = None  # when, CPU, outputs
        described = 0.0
        while time.monotonic() < deadline:
            n = _end_offsets(readable if first else written, topics, partitions)
            now = time.perf_counter()
            if n > 0 and first is None:
                first, at_first = now, cpu()
            elif n >= target and first is not None:
                if settle is None:
                    return since(first, at_first, now, target)
                if settled is None:
                    raise RuntimeError(
                        f"group {settle.group} did not settle ({settle.members} members "
                        f"holding every partition of {', '.join(settle.topics)}) before "
                        f"all {target} outputs were written"
                    )
                when, at_settled, before = settled
                return replace(
                    since(first, at_first, now, target),
                    settled=since(when, at_settled, now, target - before),
                    settling=when - began,
                )
            if (
                cluster is not None
                and settle
                and settled is None
                and now - described > SETTLE_POLL_S
            ):
                described = now
                if settle.settled(describe_group(cluster, settle.group), partitions):
                    when = time.perf_counter()
                    count = max(_end_offsets(written, topics, partitions), 0)
                    settled = (when, cpu(), count)
            time.sleep(0.02)  # polling interval of the watcher, not a synchronisation
        seen = _end_offsets(readable, topics, partitions)
        raise RuntimeError(f"only {seen} of {target} outputs arrived")
    finally:
        written.close()
        readable.close()


def watch_outputs(
    bootstrap: str, topics: list[str], target: int, *, partitions: int, timeout: float = 600
) -> float:
    """Seconds from the first output record to ``target`` records (``watch``)."""
    return watch(bootstrap, topics, target, partitions=partitions, timeout=timeout).seconds


def measure(
    ctx: BenchContext,
    pid: int,
    outputs: list[str],
    count: int,
    inputs: int,
    *,
    settle: Settle | None = None,
) -> Measured:
    """``inputs`` records over the time to the last of ``count`` outputs of process
    ``pid`` (``watch``), with its CPU and the broker's in that time; its peak RSS (the
    largest of its processes: with ``--instances N``, an instance, not the parent). With
    ``settle``, also over the window from the moment the group settled
    (``Measured.settled``): its outputs scaled to input records (``inputs`` per ``count``).
    """
    window = watch(
        ctx.bootstrap,
        outputs,
        count,
        partitions=PARTITIONS,
        pid=pid,
        broker_pid=ctx.broker_pid,
        settle=settle,
    )
    rss = max(peak_rss_of(member) for member in _family(pid))

    def rated(w: Window) -> Measured:
        records = inputs * w.outputs / count
        return Measured(
            rate=records / w.seconds,
            rss=rss,
            cpu_us=w.cpu / records * 1e6 if records else float("nan"),
            cores=w.cpu / w.seconds,
            broker_cores=w.broker_cpu / w.seconds,
            seconds=w.seconds,
        )

    settled = rated(window.settled) if window.settled else None
    return replace(rated(window), settled=settled, settling=window.settling)


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (a graceful stop), then SIGKILL if it has not exited within 60 s."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def produce_values(
    bootstrap: str, topic: str, records: Iterable[tuple[bytes | None, bytes, Any]]
) -> int:
    """Write ``(key, value, headers)`` records with the runtime's producer settings; waits
    for every acknowledgement. Returns how many."""
    producer = Producer(RuntimeConfig(bootstrap=bootstrap).producer_config())
    n = 0
    for key, value, headers in records:
        while True:
            try:
                producer.produce(topic, value, key, headers=headers)
                break
            except BufferError:
                producer.poll(0.05)
        n += 1
        if n % 5_000 == 0:
            producer.poll(0)
    producer.flush(120)
    return n


def relay_clients(bootstrap: str) -> tuple[Consumer, Producer]:
    """The bare loops' clients: the runtime's producer settings and its consumer's prefetch
    (with librdkafka's, which refills a full prefetch a second later, the byte-copy loop
    read 110k records/s, with these 209k-348k: a bare loop is the best one can write)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-bare-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            **bounded_prefetch(PREFETCH_KBYTES),
        }
    )
    return consumer, Producer(RuntimeConfig(bootstrap=bootstrap).producer_config())


def relay_rate(
    ctx: BenchContext,
    relay: Relay,
    source: str,
    hint: str,
    count: int | None = None,
    *,
    inputs: int | None = None,
) -> Measured:
    """``relay`` run in a forked process until ``count`` outputs (default ``ctx.records``),
    measured over ``inputs`` input records (default ``ctx.records``; ``measure``)."""
    target = ctx.topic(hint, partitions=PARTITIONS)
    proc = multiprocessing.get_context("fork").Process(
        target=relay, args=(ctx.bootstrap, source, target), daemon=True
    )
    proc.start()
    n = ctx.records if count is None else count
    try:
        return measure(ctx, proc.pid or 0, [target], n, inputs or ctx.records)
    finally:
        proc.kill()
        proc.join()


def peak_rss_of(pid: int) -> float:
    """Peak resident memory (VmHWM) of process ``pid``, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_instance(
    ctx: BenchContext,
    path: Path,
    app_id: str,
    source: str,
    *args: str,
    launcher: Sequence[str] = ("-m", "streams"),
) -> tuple[subprocess.Popen[bytes], list[str]]:
    """Create the app's output topics (so the watcher sees them from the start), then start
    ``streams run`` on them (``args``: more options; ``launcher``: how Python starts the
    command, e.g. with tracing set up first). Returns the process and the outputs."""
    topology = load_topology(path, app_id=app_id, params={"input": source})
    prepare_topics(Topics(ctx.admin), topology)
    cmd = [sys.executable, *launcher, "run", str(path), "--app-id", app_id]
    cmd += ["--set", f"input={source}", "--bootstrap", ctx.bootstrap, "--no-status", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, topology.topics_written


def drop_app_topics(ctx: BenchContext, app_id: str) -> None:
    """Delete every topic of ``app_id`` (outputs, changelogs, retry tiers)."""
    delete_app_topics(ctx.admin, app_id)


TICK_S = 0.002
"""How often the latency run writes what is due."""

Sample = Callable[[int, int], list[Any]]
"""``sample(count, seed)``: that many input envelopes, the same for the same seed."""


def latency_rows(
    ctx: BenchContext,
    section: str,
    path: Path | Relay,
    sample: Sample,
    *,
    rate: int,
    seconds: int,
    codec: Any,
    label: str = "",
) -> list[Row]:
    """p50 and p99 end-to-end latency of ``streams run path`` (or of a bare ``Relay``, to
    see the machine's floor): envelopes written at ``rate`` per second for ``seconds``,
    each timed from its write until an output caused by it (``causation_id``), or the
    envelope itself passed on, is read."""
    source = ctx.topic(f"{section}-lat-in", partitions=PARTITIONS)
    if isinstance(path, Path):
        app_id = unique_topic_name(f"bench-{section}-lat")
        proc, outputs = start_instance(ctx, path, app_id, source)

        def stop() -> None:
            stop_process(proc)
            drop_app_topics(ctx, app_id)

    else:
        outputs = [ctx.topic(f"{section}-lat-out", partitions=PARTITIONS)]
        forked = multiprocessing.get_context("fork").Process(
            target=path, args=(ctx.bootstrap, source, outputs[0]), daemon=True
        )
        forked.start()

        def stop() -> None:
            forked.kill()
            forked.join()

    reader = Consumer(
        {
            "bootstrap.servers": ctx.bootstrap,
            "group.id": f"bench-lat-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 5,
            "topic.metadata.refresh.interval.ms": 1_000,
        }
    )

    def record(msg: Any) -> None:
        if msg.error() is not None:
            return
        # Lazy: ids only, the payload left unread (the reader shares the machine with
        # what it measures; a full decode per output cost it a third of a core).
        env = codec.decode(msg.value(), lazy=True)
        t0 = sent.pop(env.causation_id or env.id, None)
        if t0 is not None:
            latencies.append((time.perf_counter() - t0) * 1000)

    sent: dict[str, float] = {}
    latencies: list[float] = []
    try:
        # Warm up: the instance has joined its group once its first output is readable.
        warm = sample(20, 1)
        produce_values(ctx.bootstrap, source, _encoded(warm, codec))
        watch_outputs(ctx.bootstrap, outputs, len(warm), partitions=PARTITIONS, timeout=120)
        reader.subscribe(outputs)
        # The runtime's producer settings, linger included (in every sample): one request
        # per record (linger 0) at 5k/s costs a 2-core machine's broker more CPU than the
        # pipeline under test, and measured that instead (p50 80 ms against 10).
        producer = Producer(RuntimeConfig(bootstrap=ctx.bootstrap).producer_config())
        # The first second at the rate is not timed: connections, caches and the
        # instance's batches settle (a steady state is what is measured).
        # Encoded before the clock starts, for the same reason.
        envelopes = sample(rate * (seconds + 1), 2)
        encoded = list(_encoded(envelopes, codec))
        # Written in ticks of 2 ms (what is due by then), read between them: a produce and
        # a wait per record (every 0.2 ms) kept a core three quarters busy.
        start, i = time.perf_counter(), 0
        while i < len(envelopes):
            now = time.perf_counter()
            due = min(len(envelopes), int((now - start) * rate) + 1)
            for j in range(i, due):
                key, value, headers = encoded[j]
                if j >= rate:
                    sent[envelopes[j].id] = now
                producer.produce(source, value, key, headers=headers)
            i = due
            producer.poll(0)
            tick = now + TICK_S
            while (left := tick - time.perf_counter()) > 0:
                for msg in reader.consume(500, timeout=left):
                    record(msg)
        producer.flush(30)
        # A short wait per call: consume() returns when its count is reached or its
        # timeout passes, and the last records would be timed as late by that wait.
        deadline = time.monotonic() + 60
        while sent and time.monotonic() < deadline:
            for msg in reader.consume(500, timeout=0.005):
                record(msg)
    finally:
        reader.close()
        stop()
    latencies.sort()
    if not latencies:
        raise RuntimeError("no output arrived in the latency run")
    note = f"{rate:,}/s for {seconds} s, {len(latencies):,} samples"
    return [
        Row(section, f"end-to-end latency p50{label}", _pct(latencies, 0.50), "ms", note=note),
        Row(section, f"end-to-end latency p99{label}", _pct(latencies, 0.99), "ms", note=note),
    ]


def _encoded(envelopes: Iterable[Any], codec: Any) -> Iterable[tuple[bytes, bytes, Any]]:
    for env in envelopes:
        value, headers = codec.encode(env)
        yield (env.key or "").encode(), value, headers


def _pct(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(int(q * len(sorted_values)), len(sorted_values) - 1)]
