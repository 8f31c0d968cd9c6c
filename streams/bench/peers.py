"""Section ``peers``: the throughput job in Quix Streams beside ``streams run``, one broker.

The job of section ``throughput`` (dedup on the order id in RocksDB state with a
changelog, enrich, write; at-least-once; one process; 4 partitions; 2% of the orders sent
twice), three ways in one run, each in its own process over the same input:

- the reference: the bare confluent-kafka loop on plain Avro payloads (fastavro, a set);
- Quix Streams (``streams.bench.quix_job``) on the same plain Avro payloads, with its
  RocksDB state and changelog topics, its producer given the runtime's settings; it runs
  in a virtualenv of its own under the cache (``PEER_VENV``, made on first use with
  ``pip install quixstreams==QUIX_VERSION``: Quix pins its own confluent-kafka and
  rocksdict), so Streams' dependencies stay as they are;
- ``streams run topology/enrich.py`` on the envelope input (our wire format: the
  envelope record around each payload, more bytes and more work than plain Avro).

Rates as in ``throughput``: every input record over the time from the first output to the
last, watched through the output topic's end offsets; in the same window, the CPU each
process used (its own, every thread) per input record, for Quix Streams and ``streams
run``. Target: ``streams run`` at least as fast as Quix Streams. Faust's figure is
section ``faust`` (an agent, not this job: Faust has no RocksDB-backed dedup of its own
to compare). Without a Quix install (no package index reachable) the section says why in
its note.
"""

from __future__ import annotations

import json
import string
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from streams.bench.core import (
    CPU_NOTE,
    PARTITIONS,
    BenchContext,
    Measured,
    Row,
    measure,
    stop_process,
)
from streams.bench.throughput import (
    ENRICH,
    instance_rate,
    reference_rate,
    write_inputs,
)
from streams.broker.jars import cache_root
from streams.codec import AvroCodec
from streams.runtime import RuntimeConfig
from streams.schemas import default_catalog
from streams.topology.loader import import_file

SECTION = "peers"
QUIX_VERSION = "3.28.1"
QUIX_JOB = Path(__file__).with_name("quix_job.py")
# The producer settings of every loop here: the runtime's (acks=all, idempotence, linger,
# lz4), not a client's own defaults, so the producers do the same work.
_PRODUCER_KEYS = ("enable.idempotence", "acks", "linger.ms", "compression.type")


def peer_python() -> Path:
    """The Python of the peers' virtualenv, made (with Quix Streams) on first use. Raises
    RuntimeError with pip's last line when it cannot be made."""
    venv = cache_root() / f"bench-peers-quixstreams-{QUIX_VERSION}"
    python = venv / "bin" / "python"
    marker = venv / ".installed"
    if marker.exists():
        return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    pip = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", f"quixstreams=={QUIX_VERSION}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if pip.returncode != 0:
        last = (pip.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise RuntimeError(f"cannot install quixstreams {QUIX_VERSION}: {last}")
    marker.touch()
    return python


def _quix_rate(ctx: BenchContext, python: Path, source: str, unique: int) -> Measured:
    catalog = default_catalog()
    job = import_file(ENRICH)
    producer = RuntimeConfig(bootstrap=ctx.bootstrap).producer_config()
    target = ctx.topic("peers-quix-out", partitions=PARTITIONS)
    with tempfile.TemporaryDirectory(prefix="streams-bench-quix-") as state_dir:
        spec = {
            "bootstrap": ctx.bootstrap,
            "source": source,
            "target": target,
            "group": f"bench-quix-{uuid.uuid4().hex[:8]}",
            "state_dir": state_dir,
            "placed": catalog.entry("order.placed", 2).raw,
            "enriched": catalog.entry("order.enriched", 1).raw,
            "tiers": {c: job.tier_of(c) for c in string.ascii_letters + string.digits},
            "limits": job.LIMIT_CENTS,
            "producer": {k: producer[k] for k in _PRODUCER_KEYS},
        }
        proc = subprocess.Popen(
            [str(python), str(QUIX_JOB), json.dumps(spec)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            return measure(ctx, proc.pid, [target], unique, ctx.records)
        finally:
            stop_process(proc)


def run(ctx: BenchContext) -> list[Row]:
    try:
        python = peer_python()
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        return [Row(SECTION, "Quix Streams, same job", 0, "rec/s", note=str(exc))]
    env_in, avro_in, unique = write_inputs(ctx, AvroCodec(default_catalog()))
    reference = reference_rate(ctx, avro_in, unique)
    quix = _quix_rate(ctx, python, avro_in, unique)
    with tempfile.TemporaryDirectory(prefix="streams-bench-peers-") as state_dir:
        ours = instance_rate(ctx, ENRICH, env_in, unique, "--state-dir", state_dir)
    job = f"{ctx.records:,} orders, dedup (RocksDB + changelog) and enrich, at-least-once"
    return [
        Row(SECTION, "reference: bare loop, plain Avro + set", reference.rate, "rec/s", note=job),
        Row(
            SECTION,
            f"Quix Streams {QUIX_VERSION}, plain Avro",
            quix.rate,
            "rec/s",
            baseline=reference.rate,
            note="its RocksDB state and changelog topics, the runtime's producer settings",
        ),
        Row(
            SECTION,
            "streams run enrich, envelopes",
            ours.rate,
            "rec/s",
            baseline=reference.rate,
            note="our wire format: the envelope record around each payload",
        ),
        Row(
            SECTION,
            "streams run enrich vs Quix Streams",
            ours.rate,
            "rec/s",
            baseline=quix.rate,
            target=1.0,
            note="the same job, one process each",
        ),
        Row(
            SECTION,
            f"CPU per record, Quix Streams {QUIX_VERSION}",
            quix.cpu_us,
            "µs",
            note=f"{CPU_NOTE}; the reference loop's {reference.cpu_us:.1f} µs",
        ),
        Row(
            SECTION,
            "CPU per record, streams run enrich",
            ours.cpu_us,
            "µs",
            note="the same measure, on envelopes",
        ),
    ]
