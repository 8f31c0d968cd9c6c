"""Exactly-once on the real broker: SIGKILL mid-stream, twice, and no input is seen twice.

A `streams run --guarantee exactly_once` instance copies 20,000 envelopes; it is killed
with SIGKILL (transaction open, outputs already written but not committed) twice and
restarted each time. A read_committed consumer of the output then sees every input exactly
once: the killed instances' open transactions were aborted when their restart fenced them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from confluent_kafka import Message, Producer
from confluent_kafka.admin import AdminClient
from runtime_thread import RuntimeThread

from streams.cluster import Topics
from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.runtime import Runtime, RuntimeConfig
from streams.runtime.clients import KafkaClients
from streams.runtime.topics import prepare_topics
from streams.schemas import default_catalog
from streams.testing import TopicFactory, TopicReader, caught_up, produce_envelopes, wait_until
from streams.testing.topics import unique_topic_name
from streams.topology import Topology, TopologyBuilder, load_topology, owned

ROOT = Path(__file__).resolve().parents[2]
MIRROR = ROOT / "topology" / "mirror.py"
TOTAL, KEYS, PARTITIONS = 20_000, 200, 4
FAST_REBALANCE = ["-Xconsumer.session.timeout.ms=6000", "-Xconsumer.heartbeat.interval.ms=1000"]
KILL_AT = (3_000, 9_000)  # read_committed outputs seen when each SIGKILL is sent


def inputs() -> list[Envelope]:
    out = []
    for n in range(TOTAL):
        key = f"key-{n % KEYS:03d}"
        data = {"order_id": f"o-{n}", "customer_id": key, "items": [], "total_cents": n}
        out.append(Envelope.new("order.placed", {**data, "currency": "EUR"}, version=2, key=key))
    return out


def ce_id(headers: list[tuple[str, bytes]] | None) -> str:
    return next(v.decode() for k, v in headers or [] if k == "ce_id")


def at_least(n: int) -> Callable[[Sequence[Message]], bool]:
    return lambda records: len(records) >= n


def started(log: Path) -> bool:
    return '"event": "started"' in log.read_text()


def start_mirror(
    bootstrap: str, topic: str, app_id: str, tmp_path: Path, name: str, *args: str
) -> subprocess.Popen[bytes]:
    """An exactly-once mirror instance with its own state dir and log, ``tmp_path/name``."""
    cmd = [
        sys.executable, "-m", "streams", "run", str(MIRROR), "--app-id", app_id,
        "--set", f"input={topic}", "--bootstrap", bootstrap, "--no-status",
        "--guarantee", "exactly_once", "--state-dir", str(tmp_path / name),
        *FAST_REBALANCE, *args,
    ]  # fmt: skip
    with open(tmp_path / f"{name}.log", "ab") as log:
        return subprocess.Popen(
            cmd, stdout=log, stderr=log, env={**os.environ, "STREAMS_LOG_JSON": "1"}
        )


def assert_each_once(records: Sequence[Message], sent: Sequence[Envelope]) -> None:
    seen = Counter(ce_id(m.headers()) for m in records)  # type: ignore[arg-type]
    assert set(seen) == {env.id for env in sent}
    assert [i for i, n in seen.items() if n > 1] == []


def test_sigkill_twice_mid_stream_leaves_every_input_exactly_once_in_read_committed_output(
    kafka_bootstrap: str, make_topic: TopicFactory, tmp_path: Path
) -> None:
    codec = AvroCodec(default_catalog())
    topic = make_topic("eos-in", partitions=PARTITIONS)
    app_id = unique_topic_name("eos-app")
    output = f"{app_id}-mirror"
    sent = inputs()
    produce_envelopes(kafka_bootstrap, topic, sent, codec)

    cmd = [
        sys.executable, "-m", "streams", "run", str(MIRROR), "--app-id", app_id,
        "--set", f"input={topic}", "--bootstrap", kafka_bootstrap, "--no-status",
        "--guarantee", "exactly_once", "--state-dir", str(tmp_path / "state"),
        # each restart joins while the killed instance is still a member: it is given the
        # partitions once that one's session is over (10 s by default), twice per run
        *FAST_REBALANCE,
    ]  # fmt: skip
    procs: list[subprocess.Popen[bytes]] = []

    def log(n: int) -> Path:
        return tmp_path / f"instance-{n}.log"

    def start() -> subprocess.Popen[bytes]:
        with open(log(len(procs)), "wb") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=out, env={**os.environ})
        procs.append(proc)
        return proc

    def logs() -> str:
        return "".join(log(n).read_text() for n in range(len(procs)))[-5000:]

    reader = TopicReader(kafka_bootstrap, output, config={"isolation.level": "read_committed"})
    try:
        proc = start()
        for threshold in KILL_AT:
            reader.wait_for(at_least(threshold), 60, what=f"{threshold} outputs")
            assert proc.poll() is None, logs()
            proc.send_signal(signal.SIGKILL)  # mid-stream, a transaction open
            proc.wait()
            proc = start()
        wait_until(lambda: caught_up(kafka_bootstrap, app_id, topic), 90, what="caught up")
        reader.wait_for(lambda rs: len(rs) >= TOTAL, 60, what="every output")
        # The last instance may have found nothing left to do: it is stopped once it runs
        # (its signal handlers installed), as an operator would stop it.
        wait_until(lambda: started(log(2)), 60, what="the last instance started")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, logs()
        while reader.poll(1.0):  # to the end: nothing more can come, the instance stopped
            pass
    except Exception:
        print(logs())
        raise
    finally:
        reader.close()
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()

    assert len(procs) == 3
    assert_each_once(reader.records, sent)
    assert len(reader.records) == TOTAL


def test_an_instance_fenced_by_a_newer_one_with_its_id_stops_and_nothing_is_duplicated(
    kafka_bootstrap: str, make_topic: TopicFactory, tmp_path: Path
) -> None:
    codec = AvroCodec(default_catalog())
    topic = make_topic("eos-fence-in", partitions=PARTITIONS)
    app_id = unique_topic_name("eos-fence")
    sent = inputs()[:4_000]
    first, second = sent[:2_000], sent[2_000:]

    def start(state: str) -> subprocess.Popen[bytes]:
        return start_mirror(kafka_bootstrap, topic, app_id, tmp_path, state, "--instance-id", "a")

    reader = TopicReader(
        kafka_bootstrap, f"{app_id}-mirror", config={"isolation.level": "read_committed"}
    )
    old = start("old")
    new: subprocess.Popen[bytes] | None = None
    try:
        produce_envelopes(kafka_bootstrap, topic, first, codec)
        reader.wait_for(at_least(len(first)), 60, what="the first outputs")
        # The same instance id elsewhere (a copy started on another machine): it takes over
        # the transactional.id, so the old one is fenced at its next transaction.
        new = start("new")
        wait_until(lambda: started(tmp_path / "new.log"), 60, what="the new instance")
        produce_envelopes(kafka_bootstrap, topic, second, codec)  # partly on the old one's
        assert old.wait(60) == 1
        wait_until(lambda: caught_up(kafka_bootstrap, app_id, topic), 90, what="caught up")
        reader.wait_for(at_least(len(sent)), 60, what="every output")
        new.send_signal(signal.SIGTERM)
        assert new.wait(60) == 0
        while reader.poll(1.0):
            pass
    except Exception:
        for name in ("old", "new"):
            print(f"--- {name}:\n", (tmp_path / f"{name}.log").read_text()[-3000:])
        raise
    finally:
        reader.close()
        for proc in (old, new):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    assert "fenced" in (tmp_path / "old.log").read_text().lower()
    assert_each_once(reader.records, sent)


def test_two_machines_without_instance_ids_share_the_work_exactly_once_through_a_sigkill(
    kafka_bootstrap: str, make_topic: TopicFactory, tmp_path: Path
) -> None:
    codec = AvroCodec(default_catalog())
    topic = make_topic("eos-two-in", partitions=PARTITIONS)
    app_id = unique_topic_name("eos-two")
    sent = inputs()[:8_000]
    first, second = sent[:4_000], sent[4_000:]

    def start(machine: str) -> subprocess.Popen[bytes]:
        # each "machine" has its own state dir, so both claim slot 0: before slot tokens,
        # both took transactional.id <app>-0 and one fenced the other
        return start_mirror(kafka_bootstrap, topic, app_id, tmp_path, machine)

    reader = TopicReader(
        kafka_bootstrap, f"{app_id}-mirror", config={"isolation.level": "read_committed"}
    )
    a, b = start("a"), start("b")
    try:
        wait_until(lambda: started(tmp_path / "a.log") and started(tmp_path / "b.log"), 60)
        produce_envelopes(kafka_bootstrap, topic, first, codec)
        reader.wait_for(at_least(len(first)), 60, what="the first outputs")
        assert a.poll() is None and b.poll() is None  # neither fenced the other
        produce_envelopes(kafka_bootstrap, topic, second, codec)
        reader.wait_for(at_least(len(first) + 500), 60, what="outputs of the second half")
        a.send_signal(signal.SIGKILL)  # mid-stream: b takes over its partitions
        a.wait()
        wait_until(lambda: caught_up(kafka_bootstrap, app_id, topic), 90, what="caught up")
        reader.wait_for(at_least(len(sent)), 60, what="every output")
        assert b.poll() is None
        b.send_signal(signal.SIGTERM)
        assert b.wait(60) == 0
        while reader.poll(1.0):
            pass
    finally:
        reader.close()
        for p in (a, b):
            if p.poll() is None:
                p.kill()
                p.wait()
    assert_each_once(reader.records, sent)


def test_on_the_consumer_group_protocol_a_rebalance_mid_stream_keeps_each_input_once(
    kafka_bootstrap: str, make_topic: TopicFactory, tmp_path: Path
) -> None:
    """KIP-848's protocol: the second instance joins mid-stream, the first gives up part of
    its partitions (an incremental revoke commits their transaction), nothing doubles."""
    codec = AvroCodec(default_catalog())
    topic = make_topic("eos-848-in", partitions=PARTITIONS)
    app_id = unique_topic_name("eos-848")
    sent = inputs()[:6_000]
    first, second = sent[:3_000], sent[3_000:]
    assigned = '"event": "partitions assigned"'

    def start(machine: str) -> subprocess.Popen[bytes]:
        cmd = [
            sys.executable, "-m", "streams", "run", str(MIRROR), "--app-id", app_id,
            "--set", f"input={topic}", "--bootstrap", kafka_bootstrap, "--no-status",
            "--guarantee", "exactly_once", "--state-dir", str(tmp_path / machine),
            "-Xconsumer.group.protocol=consumer",
        ]  # fmt: skip
        with open(tmp_path / f"{machine}.log", "ab") as log:
            return subprocess.Popen(
                cmd, stdout=log, stderr=log, env={**os.environ, "STREAMS_LOG_JSON": "1"}
            )

    reader = TopicReader(
        kafka_bootstrap, f"{app_id}-mirror", config={"isolation.level": "read_committed"}
    )
    a = start("a")
    b: subprocess.Popen[bytes] | None = None
    try:
        produce_envelopes(kafka_bootstrap, topic, first, codec)
        reader.wait_for(at_least(len(first) // 2), 60, what="the first outputs")
        b = start("b")
        # a gives up part of its partitions, then b takes them (a heartbeat later)
        wait_until(lambda: "partitions revoked" in (tmp_path / "a.log").read_text(), 60)
        wait_until(lambda: assigned in (tmp_path / "b.log").read_text(), 60)
        produce_envelopes(kafka_bootstrap, topic, second, codec)
        wait_until(lambda: caught_up(kafka_bootstrap, app_id, topic), 90, what="caught up")
        reader.wait_for(at_least(len(sent)), 60, what="every output")
        for proc in (a, b):
            proc.send_signal(signal.SIGTERM)
        assert a.wait(60) == 0 and b.wait(60) == 0
        while reader.poll(1.0):
            pass
    except Exception:
        for name in ("a", "b"):
            print(f"--- {name}:\n", (tmp_path / f"{name}.log").read_text()[-3000:])
        raise
    finally:
        reader.close()
        for proc in (a, b):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    assert_each_once(reader.records, sent)
    assert len(reader.records) == len(sent)


def test_a_caught_up_instance_commits_at_once_so_its_last_outputs_are_readable(
    kafka_bootstrap: str, kafka_admin: AdminClient, make_topic: TopicFactory, tmp_path: Path
) -> None:
    """Outputs of a transaction are readable when it commits. An instance that has read
    everything commits then (``commit_idle_s``), not at its interval: here two minutes,
    longer than the wait below, so the old behaviour would fail it."""
    topic = make_topic("eos-idle-in", partitions=2)
    topology = load_topology(MIRROR, app_id=unique_topic_name("eos-idle"), params={"input": topic})
    prepare_topics(Topics(kafka_admin), topology)
    config = RuntimeConfig(
        kafka_bootstrap,
        processing_guarantee="exactly_once",
        commit_interval_s=120,
        state_dir=str(tmp_path),
    )
    sent = inputs()[:300]
    produce_envelopes(kafka_bootstrap, topic, sent, AvroCodec(default_catalog()))
    instance = RuntimeThread(Runtime(topology, config))
    try:
        output = topology.topics_written[0]
        committed = {"isolation.level": "read_committed"}
        with TopicReader(kafka_bootstrap, output, config=committed) as reader:
            assert_each_once(reader.wait_for(at_least(len(sent)), 45), sent)
    finally:
        assert instance.stop(30) is None


# A transaction the tests below hold open past its timeout: the timeout, one look of the
# broker for expired transactions after it (every second on the local broker), a margin.
TXN_TIMEOUT_MS = 3_000
PAST_THE_TIMEOUT_S = TXN_TIMEOUT_MS / 1000 + 3


class CommitStalledOnce(KafkaClients):
    """Real clients, but the first producer's first ``commit_transaction`` waits
    ``PAST_THE_TIMEOUT_S`` before it goes to the broker: a commit that waits out its
    coordinator's move to another node, as a killed node makes it (seen in the cluster
    suite)."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap)
        self.stalled = threading.Event()
        stalled = self.stalled

        class Stalling(Producer):
            def commit_transaction(self, *args: float) -> None:
                if not stalled.is_set():
                    stalled.set()
                    time.sleep(PAST_THE_TIMEOUT_S)
                super().commit_transaction(*args)

        self._first: type[Producer] = Stalling

    def producer(self, config: dict[str, object]) -> Producer:
        make, self._first = self._first, Producer
        return make(config)


def assert_redone_after_the_broker_aborted(
    bootstrap: str,
    topology: Topology,
    stalled: threading.Event,
    tmp_path: Path,
    clients: KafkaClients | None = None,
) -> None:
    """Runs ``topology`` exactly-once (its input, ``input``, already created) with a
    ``TXN_TIMEOUT_MS`` transaction timeout over 500 inputs while something holds a
    transaction open past it once (``stalled`` set then). The broker aborts that
    transaction and bumps the producer's epoch; no other instance took over, so the
    instance must go on with a new producer: a read_committed reader finds every input
    once, a read_uncommitted one the aborted first copies too (the proof the broker did
    abort), and the instance stops cleanly (one that had stopped would fail ``stop``)."""
    config = RuntimeConfig(
        bootstrap,
        processing_guarantee="exactly_once",
        transaction_timeout_ms=TXN_TIMEOUT_MS,
        state_dir=str(tmp_path),
    )
    sent = inputs()[:500]
    produce_envelopes(bootstrap, topology.topics_read[0], sent, AvroCodec(default_catalog()))
    instance = RuntimeThread(Runtime(topology, config, clients=clients))
    try:
        output = topology.topics_written[0]
        committed = {"isolation.level": "read_committed"}
        with TopicReader(bootstrap, output, config=committed) as reader:
            assert_each_once(reader.wait_for(at_least(len(sent)), 60), sent)
        assert stalled.is_set()
        everything = {"isolation.level": "read_uncommitted"}
        with TopicReader(bootstrap, output, config=everything) as raw:
            raw.wait_for(at_least(len(sent) + 1), 30, what="the aborted first copies")
    finally:
        assert instance.stop(30) is None


def test_a_transaction_the_broker_timed_out_is_redone_and_the_instance_goes_on(
    kafka_bootstrap: str, kafka_admin: AdminClient, make_topic: TopicFactory, tmp_path: Path
) -> None:
    """The commit waits past the timeout: librdkafka ends it with "fenced by a newer
    instance" (the instance stopped on it before)."""
    topic = make_topic("eos-txn-timeout-in", partitions=2)
    topology = load_topology(
        MIRROR, app_id=unique_topic_name("eos-txn-timeout"), params={"input": topic}
    )
    prepare_topics(Topics(kafka_admin), topology)
    clients = CommitStalledOnce(kafka_bootstrap)
    assert_redone_after_the_broker_aborted(
        kafka_bootstrap, topology, clients.stalled, tmp_path, clients
    )


def test_a_step_that_stalls_past_the_transaction_timeout_is_redone_and_the_instance_goes_on(
    kafka_bootstrap: str, kafka_admin: AdminClient, make_topic: TopicFactory, tmp_path: Path
) -> None:
    """A step blocks past the timeout (a slow call to another service) with outputs in
    the open transaction: the next write of the old producer is fenced (the instance
    stopped on it before, with the SystemError confluent-kafka raised over the fencing)."""
    topic = make_topic("eos-step-stall-in", partitions=2)
    stalled = threading.Event()
    calls = 0

    def slow_once(env: Envelope) -> Envelope:
        nonlocal calls
        calls += 1
        if calls == 50 and not stalled.is_set():  # outputs are in the open transaction
            stalled.set()
            time.sleep(PAST_THE_TIMEOUT_S)
        return env

    builder = TopologyBuilder(unique_topic_name("eos-step-stall"))
    builder.source(topic, type="order.placed", version=2).map(slow_once).to(
        owned("out"), type="order.placed", version=2
    )
    topology = builder.build(default_catalog())
    prepare_topics(Topics(kafka_admin), topology)
    assert_redone_after_the_broker_aborted(kafka_bootstrap, topology, stalled, tmp_path)
