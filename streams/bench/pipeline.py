"""Section ``pipeline``: the orders topology end to end through the broker.

Figures, all in one run on the same broker and the same input topic:

- throughput of one ``streams run topology/orders.py`` instance (decode, validate, enrich,
  route, encode, produce, commit after acks) against a bare confluent-kafka
  consume→produce loop copying the same records: envelopes/s from the first output to the
  last, watched from outside through the output topics' end offsets, so both are measured
  the same way. Every loop produces with the runtime's producer settings (``RuntimeConfig``:
  idempotent, ``acks=all``, ``linger.ms=5``, lz4, murmur2 partitioner), runs in its own
  process and reads the same input topic; the bare loops consume with librdkafka's
  defaults (the runtime bounds its prefetch, which is part of what it costs). What the bare
  loop leaves out on purpose: decoding, delivery callbacks, commits;
- two rows to show where the time goes: the bare loop plus fastavro decoding and
  re-encoding each envelope (envelope record and payload, headers copied): what the Avro
  work alone costs a Python pipeline, done the plain way; and ``topology/mirror.py``
  (decode and re-encode through the runtime, no user code): what the runtime and codec
  alone cost;
- p50/p99 end-to-end latency (input produced → output readable) at a fixed input rate;
- peak RSS (VmHWM) of the instance and of the bare loop's process.
"""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable
from io import BytesIO
from pathlib import Path
from typing import Any, cast

from confluent_kafka import Consumer, Producer
from fastavro import schemaless_reader, schemaless_writer

from streams.admin import delete_topics
from streams.bench.core import BenchContext, Row, stop_process, watch_outputs
from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.examples import example_path
from streams.runtime import RuntimeConfig
from streams.runtime.topics import prepare_topics
from streams.schemas import default_catalog
from streams.testing.topics import unique_topic_name
from streams.topology import load_topology
from streams.topology.loader import import_file

SECTION = "pipeline"
ORDERS = example_path("orders")
MIRROR = example_path("mirror")
PARTITIONS = 4


def _produce(bootstrap: str, topic: str, envelopes: Iterable[Envelope], codec: AvroCodec) -> int:
    producer = Producer(RuntimeConfig(bootstrap=bootstrap).producer_config())
    n = 0
    for env in envelopes:
        value, headers = codec.encode(env)
        while True:
            try:
                producer.produce(topic, value, (env.key or "").encode(), headers=cast(Any, headers))
                break
            except BufferError:
                producer.poll(0.05)
        n += 1
        if n % 5_000 == 0:
            producer.poll(0)
    producer.flush(120)
    return n


def _clients(bootstrap: str) -> tuple[Consumer, Producer]:
    """The bare loops' clients: the runtime's producer settings; a consumer with librdkafka's
    defaults (the runtime's smaller prefetch is one of its costs, measured against them)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-bare-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
        }
    )
    return consumer, Producer(RuntimeConfig(bootstrap=bootstrap).producer_config())


def _bare_relay(bootstrap: str, source: str, target: str) -> None:
    """The ceiling: consume a batch, produce each record unchanged, serve acks; forever."""
    consumer, producer = _clients(bootstrap)
    consumer.subscribe([source])
    while True:
        for msg in consumer.consume(1_000, timeout=0.5):
            if msg.error() is None:
                producer.produce(target, msg.value(), msg.key(), headers=msg.headers())
        producer.poll(0)


def _avro_relay(bootstrap: str, source: str, target: str) -> None:
    """The Avro ceiling: the bare loop plus fastavro reading each envelope and its payload
    and writing both back (same schemas, same bytes out); headers copied as they came."""
    catalog = default_catalog()
    envelope, payload = catalog.envelope, catalog.get("order.placed", 2)
    consumer, producer = _clients(bootstrap)
    consumer.subscribe([source])
    while True:
        for msg in consumer.consume(1_000, timeout=0.5):
            if msg.error() is not None:
                continue
            rec: Any = schemaless_reader(BytesIO(cast(bytes, msg.value())), envelope, None)
            data = schemaless_reader(BytesIO(rec["data"]), payload, None)
            buf = BytesIO()
            schemaless_writer(buf, payload, data)
            rec["data"] = buf.getvalue()
            buf = BytesIO()
            schemaless_writer(buf, envelope, rec)
            producer.produce(target, buf.getvalue(), msg.key(), headers=msg.headers())
        producer.poll(0)


def _relay_rate(ctx: BenchContext, relay: Any, source: str, hint: str) -> tuple[float, float]:
    """Records/s of ``relay`` (run in a forked process) over the ``ctx.records`` inputs of
    ``source``, and its peak RSS in MB."""
    target = ctx.topic(hint, partitions=PARTITIONS)
    proc = multiprocessing.get_context("fork").Process(
        target=relay, args=(ctx.bootstrap, source, target), daemon=True
    )
    proc.start()
    try:
        seconds = watch_outputs(ctx.bootstrap, [target], ctx.records, partitions=PARTITIONS)
        return ctx.records / seconds, _peak_rss_mb(cast(int, proc.pid))
    finally:
        proc.kill()
        proc.join()


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _start_instance(
    ctx: BenchContext, app_id: str, source: str, path: Path = ORDERS
) -> subprocess.Popen[bytes]:
    """Create the app's output topics (so the watcher sees them from the start), then start
    ``streams run`` on them."""
    topology = load_topology(path, app_id=app_id, params={"input": source})
    prepare_topics(ctx.admin, topology)
    bootstrap = ctx.bootstrap
    cmd = [sys.executable, "-m", "streams", "run", str(path), "--app-id", app_id]
    cmd += ["--set", f"input={source}", "--bootstrap", bootstrap, "--no-status"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _throughput(ctx: BenchContext, codec: AvroCodec, orders_mod: Any) -> list[Row]:
    n = ctx.records
    source = ctx.topic("pipeline-in", partitions=PARTITIONS)
    _produce(ctx.bootstrap, source, orders_mod.sample_orders(n), codec)
    bare_rate, bare_rss = _relay_rate(ctx, _bare_relay, source, "pipeline-bare-out")
    avro_rate, _ = _relay_rate(ctx, _avro_relay, source, "pipeline-avro-out")

    app_id = unique_topic_name("bench-orders")
    outputs = [f"{app_id}-accepted", f"{app_id}-rejected"]
    proc = _start_instance(ctx, app_id, source)
    try:
        t_pipe = watch_outputs(ctx.bootstrap, outputs, n, partitions=PARTITIONS)
        rss = _peak_rss_mb(proc.pid)
    finally:
        stop_process(proc)
        delete_topics(ctx.admin, outputs)
    mirror_app = unique_topic_name("bench-mirror")
    mirror_out = [f"{mirror_app}-mirror"]
    proc = _start_instance(ctx, mirror_app, source, MIRROR)
    try:
        t_mirror = watch_outputs(ctx.bootstrap, mirror_out, n, partitions=PARTITIONS)
    finally:
        stop_process(proc)
        delete_topics(ctx.admin, mirror_out)
    rate = n / t_pipe
    return [
        Row(SECTION, "bare consume→produce loop", bare_rate, "rec/s", note=f"{n:,} records"),
        Row(
            SECTION,
            "bare loop + fastavro decode/encode",
            avro_rate,
            "env/s",
            baseline=bare_rate,
            note="fastavro reads and writes each envelope and payload: the Avro work alone",
        ),
        Row(
            SECTION,
            "orders pipeline (1 instance)",
            rate,
            "env/s",
            baseline=bare_rate,
            target=0.7,
            note=f"{n:,} orders, {PARTITIONS} partitions, at-least-once",
        ),
        Row(
            SECTION,
            "mirror topology (decode, encode)",
            n / t_mirror,
            "env/s",
            baseline=bare_rate,
            note="no user code: the runtime and codec alone",
        ),
        Row(SECTION, "peak RSS of the instance", rss, "MB", note=f"bare loop: {bare_rss:.0f} MB"),
    ]


def _latency(ctx: BenchContext, codec: AvroCodec, orders_mod: Any) -> list[Row]:
    rate, seconds = 500, (4 if ctx.quick else 10)
    source = ctx.topic("pipeline-lat-in", partitions=PARTITIONS)
    app_id = unique_topic_name("bench-orders-lat")
    outputs = [f"{app_id}-accepted", f"{app_id}-rejected"]
    proc = _start_instance(ctx, app_id, source)
    reader = Consumer(
        {
            "bootstrap.servers": ctx.bootstrap,
            "group.id": f"bench-lat-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 5,
            "topic.metadata.refresh.interval.ms": 1_000,
        }
    )
    try:
        # Warm up: the instance has joined its group once its first output is readable.
        warm = list(orders_mod.sample_orders(20, seed=1))
        _produce(ctx.bootstrap, source, warm, codec)
        watch_outputs(ctx.bootstrap, outputs, len(warm), partitions=PARTITIONS, timeout=120)
        reader.subscribe(outputs)
        producer = Producer(
            {**RuntimeConfig(bootstrap=ctx.bootstrap).producer_config(), "linger.ms": 0}
        )
        sent: dict[str, float] = {}
        latencies: list[float] = []
        orders = list(orders_mod.sample_orders(rate * seconds, seed=2))
        start = time.perf_counter()
        for i, env in enumerate(orders):
            due = start + i / rate
            while (now := time.perf_counter()) < due:
                for msg in reader.consume(100, timeout=min(due - now, 0.005)):
                    _record_latency(msg, codec, sent, latencies)
            value, headers = codec.encode(env)
            sent[env.id] = time.perf_counter()
            producer.produce(source, value, (env.key or "").encode(), headers=cast(Any, headers))
            producer.poll(0)
        producer.flush(30)
        deadline = time.monotonic() + 60
        while len(latencies) < len(orders) and time.monotonic() < deadline:
            for msg in reader.consume(500, timeout=0.2):
                _record_latency(msg, codec, sent, latencies)
    finally:
        reader.close()
        stop_process(proc)
        delete_topics(ctx.admin, outputs)
    latencies.sort()
    if not latencies:
        raise RuntimeError("no output arrived in the latency run")
    note = f"{rate}/s for {seconds} s, {len(latencies):,} samples"
    return [
        Row(SECTION, "end-to-end latency p50", _pct(latencies, 0.50), "ms", note=note),
        Row(SECTION, "end-to-end latency p99", _pct(latencies, 0.99), "ms", note=note),
    ]


def _record_latency(msg: Any, codec: AvroCodec, sent: dict[str, float], out: list[float]) -> None:
    if msg.error() is not None:
        return
    env = codec.decode(msg.value(), msg.headers())
    t0 = sent.pop(env.causation_id or "", None)
    if t0 is not None:
        out.append((time.perf_counter() - t0) * 1000)


def _pct(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(int(q * len(sorted_values)), len(sorted_values) - 1)]


def run(ctx: BenchContext) -> list[Row]:
    codec = AvroCodec(default_catalog())
    orders_mod = import_file(ORDERS)
    return _throughput(ctx, codec, orders_mod) + _latency(ctx, codec, orders_mod)
