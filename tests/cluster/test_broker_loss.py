"""Broker loss on a three-node cluster: nothing lost, nothing twice, no stop by itself.

The cluster (``kafka_cluster``: three KRaft nodes, replication factor 3, min ISR 2) runs
`streams run` instances while its nodes are killed (SIGKILL), stopped and started in turn,
or frozen (SIGSTOP) for longer than every timeout its silence sets off (``FROZEN_S``).
Input arrives in chunks, one chunk while each node is down,
and the output must grow while it is down: losing a node is no reason to stall. Every
topic the instance creates takes the cluster's replication factor, so no partition is
left without a leader. At the end a read_committed reader sees every input (at-least-once)
or every input exactly once (exactly-once), and the instance has never exited by itself.
Where both guarantees are tested, an app of each runs side by side on its own topics
through one cycle of failures: each node is restarted once for both.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from confluent_kafka import Message
from factories import order

from streams.broker import FAST_FAILOVER, LocalCluster
from streams.cluster import admin_client, create_topic, delete_app_topics, delete_topics
from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.runtime.config import RuntimeConfig
from streams.schemas import default_catalog
from streams.testing import (
    TopicReader,
    TopologyProcess,
    TopologyProcessError,
    caught_up,
    produce_envelopes,
    wait_until,
)
from streams.testing.topics import unique_topic_name

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
DEDUP, REVENUE = ROOT / "topology" / "dedup.py", ROOT / "topology" / "revenue.py"
PARTITIONS, KEYS = 6, 60
# A killed instance's partitions move after this long (its restart takes them back), and
# an instance whose group coordinator was on a lost node has its partitions back about two
# sessions later (its own session lost, then its old membership's on the new coordinator).
SESSION_MS = int(FAST_FAILOVER["group.min.session.timeout.ms"])  # the brokers' floor: 3 s
FAST_REBALANCE = [
    f"-Xconsumer.session.timeout.ms={SESSION_MS}",
    "-Xconsumer.heartbeat.interval.ms=500",  # six a session: one late on a busy machine is no loss
]
CODEC = AvroCodec(default_catalog())
SENDER = {"request.timeout.ms": 5_000}
# What a frozen node's silence sets off, each after its timeout (ms): the longest, an
# open transaction's, decides how long the node stays frozen (``FROZEN_S``), so that each
# has fired before the node is continued, two seconds more for whatever acts on it.
SILENCE_TIMEOUTS_MS = (
    int(FAST_FAILOVER["broker.session.timeout.ms"]),  # the controller fences it
    int(FAST_FAILOVER["replica.lag.time.max.ms"]),  # it leaves every ISR
    SENDER["request.timeout.ms"],  # the sender's requests to it are sent elsewhere
    SESSION_MS,  # the instance's group session, when it coordinates the group
    RuntimeConfig.transaction_timeout_ms,  # an open transaction of the instance times out
)
FROZEN_S = max(SILENCE_TIMEOUTS_MS) / 1000 + 2.0
BASE = datetime(2026, 1, 1, tzinfo=UTC)
GUARANTEES = ("at_least_once", "exactly_once")


def orders(start: int, count: int) -> list[Envelope]:
    """Placed orders ``start`` to ``start + count``, 0.1 s apart in event time, keyed by
    customer; every tenth sent twice (the same envelope: dedup drops the second)."""
    out = []
    for n in range(start, start + count):
        env = order(n, f"c-{n % KEYS:03d}", time=BASE + timedelta(seconds=n * 0.1))
        out += [env, env] if n % 10 == 0 else [env]
    return out


def ce_ids(records: Sequence[Message]) -> Counter[str]:
    return Counter(
        next(v.decode() for k, v in m.headers() or [] if k == "ce_id")  # type: ignore[union-attr]
        for m in records
    )


class Job:
    """One app on the cluster: its input topic, an instance (restartable), the output read
    read_committed, and the inputs sent so far."""

    def __init__(self, cluster: LocalCluster, path: Path, output: str, guarantee: str, tmp: Path):
        self.cluster = cluster
        self.guarantee = guarantee
        self.bootstrap = cluster.bootstrap
        self.admin = admin_client(self.bootstrap)
        self.app_id = unique_topic_name("loss")
        self.source = unique_topic_name("loss-in")
        create_topic(self.admin, self.source, partitions=PARTITIONS)  # the cluster's RF: 3
        # A state dir per job: two jobs of one test run side by side.
        state = tmp / self.app_id / "state"
        self.args = ["--guarantee", guarantee, "--state-dir", str(state), *FAST_REBALANCE]
        self.path = path
        self.sent: list[Envelope] = []
        self.instances: list[TopologyProcess] = []
        self.reader = TopicReader(
            self.bootstrap, f"{self.app_id}-{output}", config={"isolation.level": "read_committed"}
        )

    @property
    def instance(self) -> TopologyProcess:
        return self.instances[-1]

    def launch(self) -> None:
        """Start an instance without waiting for it (``wait_started``), so that two jobs'
        instances start side by side."""
        proc = TopologyProcess(
            self.path,
            self.bootstrap,
            app_id=self.app_id,
            settings={"input": self.source},
            args=self.args,
        )
        self.instances.append(proc.start())

    def wait_started(self) -> None:
        self.instance.wait_started(120)

    def start(self) -> None:
        self.launch()
        self.wait_started()

    def alive(self) -> None:
        """The instance runs: it never gives up on a cluster that lost a node."""
        try:
            self.instance.check()
        except TopologyProcessError as exc:
            raise AssertionError(f"the {self.guarantee} instance stopped: {exc}") from None

    def send(self, count: int) -> None:
        batch = orders(len(self.unique()), count)
        # A request to a frozen node is given up after 5 s (librdkafka's 30 s would outlast
        # the wait) and sent again to the partition's new leader.
        produce_envelopes(self.bootstrap, self.source, batch, CODEC, timeout=90, config=SENDER)
        self.sent += batch

    def unique(self) -> set[str]:
        return {e.id for e in self.sent}

    def wait_for(
        self, predicate: Callable[[Sequence[Message]], bool], what: str, timeout: float = 120.0
    ) -> None:
        """Until ``predicate`` holds for the output; a timeout quotes the instance's log."""
        try:
            self.reader.wait_for(predicate, timeout, what=f"{what} ({self.guarantee})")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\ninstance output:\n{self.instance.output(60)}") from None

    def wait_output(self, count: int, timeout: float = 120.0) -> None:
        """Until the output holds ``count`` distinct inputs (progress, not completion)."""
        self.wait_for(lambda records: len(ce_ids(records)) >= count, f"{count} outputs", timeout)
        self.alive()

    def wait_caught_up(self) -> None:
        """Until the instance has committed the end of its input."""
        wait_until(lambda: caught_up(self.bootstrap, self.app_id, self.source), 180,
                   what=f"the {self.guarantee} instance caught up")  # fmt: skip

    def finish(self) -> Counter[str]:
        """Wait until the instance has committed everything, then the output's ids."""
        self.wait_caught_up()
        self.wait_output(len(self.unique()))
        self.alive()
        while self.reader.poll(1.0):  # the rest (duplicates of at-least-once, if any)
            pass
        return ce_ids(self.reader.records)

    def close(self) -> None:
        self.reader.close()
        for proc in self.instances:
            proc.close()
        delete_app_topics(self.admin, self.app_id)
        delete_topics(self.admin, [self.source])


@pytest.fixture
def job(kafka_cluster: LocalCluster, tmp_path: Path) -> Iterator[Callable[..., Job]]:
    made: list[Job] = []

    def make(path: Path, output: str, guarantee: str) -> Job:
        made.append(Job(kafka_cluster, path, output, guarantee, tmp_path))
        return made[-1]

    yield make
    kafka_cluster.up()  # every node answering (a test may fail with one frozen) ...
    for j in made:
        j.close()  # ... to delete what the test made


def replicated(job: Job) -> None:
    """Every topic the app made has three replicas (the cluster's default)."""
    metadata = job.admin.list_topics(timeout=30)
    made = [t for name, t in metadata.topics.items() if name.startswith(f"{job.app_id}-")]
    assert made, "the app created no topics"
    for topic in made:
        assert {len(p.replicas) for p in topic.partitions.values()} == {3}, topic.topic


def side_by_side(job: Callable[..., Job], path: Path, output: str) -> list[Job]:
    """One job per guarantee, each with its own app and topics, their instances started
    together: one cycle of node failures tests both."""
    jobs: list[Job] = [job(path, output, guarantee) for guarantee in GUARANTEES]
    for j in jobs:
        j.launch()
    for j in jobs:
        j.wait_started()
    return jobs


def test_dedup_under_both_guarantees_survives_each_node_killed_in_turn_and_an_instance_sigkill(
    job: Callable[..., Job], kafka_cluster: LocalCluster
) -> None:
    jobs = side_by_side(job, DEDUP, "unique")
    for j in jobs:
        j.send(600)
    for j in jobs:
        j.wait_output(len(j.unique()))
        replicated(j)
    for node in kafka_cluster.node_ids:
        kafka_cluster.kill(node)
        for j in jobs:
            j.send(600)  # while the node is down: each output must still grow
        for j in jobs:
            j.wait_output(len(j.unique()))
        kafka_cluster.start(node)
        kafka_cluster.wait_in_sync(timeout=120)
    for j in jobs:
        j.instance.kill()  # and the instances themselves, mid-stream
        j.send(600)
    for j in jobs:
        j.launch()
    for j in jobs:
        j.wait_started()
    for j in jobs:
        seen = j.finish()
        missing = j.unique() - set(seen)
        assert not missing, f"{j.guarantee}: {len(missing)} inputs missing, e.g. {min(missing)}"
        if j.guarantee == "exactly_once":
            twice = sorted(i for i, n in seen.items() if n > 1)
            assert twice == [], f"exactly_once: {len(twice)} inputs written twice"


def test_a_windowed_sum_under_both_guarantees_survives_a_node_killed_mid_window(
    job: Callable[..., Job], kafka_cluster: LocalCluster
) -> None:
    jobs = side_by_side(job, REVENUE, "revenue")
    for j in jobs:
        j.send(1_200)  # two minutes of event time: the first window closes
    for j in jobs:
        j.wait_for(lambda records: len(records) > 0, "the first windows")
    for node in kafka_cluster.node_ids:
        kafka_cluster.kill(node)
        before = {j.guarantee: len(j.reader.records) for j in jobs}
        for j in jobs:
            j.send(900)  # a minute and a half more: windows close while the node is down
        for j in jobs:
            j.wait_for(lambda rs, n=before[j.guarantee]: len(rs) > n, "windows while down")
            j.alive()
        kafka_cluster.start(node)
        kafka_cluster.wait_in_sync(timeout=120)
    for j in jobs:
        j.wait_caught_up()
        j.alive()
        while j.reader.poll(1.0):
            pass
        sums = _sums(j.reader.records)
        expected = _expected_sums(j.sent)
        # No order counted twice, none lost.
        wrong = {w: (total, expected[w]) for w, total in sums.items() if total != expected.get(w)}
        assert wrong == {}, f"{j.guarantee}: windows with wrong (orders, cents) vs expected"
        # Every partition's stream time is within a second of the last order's: each
        # window that ended (plus its 10 s grace) a few seconds before that was closed and
        # written.
        last = max(int(e.time.timestamp() * 1000) for e in j.sent)
        closed = {w for w in expected if w[1] + 60_000 + 10_000 < last - 5_000}
        unwritten = sorted(closed - set(sums))
        assert unwritten == [], f"{j.guarantee}: closed windows never written"
        if j.guarantee == "exactly_once":
            assert len(j.reader.records) == len(sums), "exactly_once: a window written twice"


def _sums(records: Sequence[Message]) -> dict[tuple[str, int], tuple[int, int]]:
    out = {}
    for m in records:
        d = CODEC.decode(m.value(), m.headers()).data  # type: ignore[arg-type]
        out[(d["customer_id"], d["window_start_ms"])] = (d["orders"], d["revenue_cents"])
    return out


def _expected_sums(sent: Sequence[Envelope]) -> dict[tuple[str, int], tuple[int, int]]:
    """(orders, revenue) per customer and 1-minute window of every order sent (one sent
    twice counts twice: the windowed sum has no dedup; the input is in event-time order,
    so none is late)."""
    totals: dict[tuple[str, int], tuple[int, int]] = {}
    for env in sent:
        start = int(env.time.timestamp() * 1000) // 60_000 * 60_000
        key = (env.data["customer_id"], start)
        count, cents = totals.get(key, (0, 0))
        totals[key] = (count + 1, cents + env.data["total_cents"])
    return totals


def test_a_rolling_restart_of_every_node_loses_nothing(
    job: Callable[..., Job], kafka_cluster: LocalCluster
) -> None:
    j = job(DEDUP, "unique", "exactly_once")
    j.start()
    j.send(600)
    for node in kafka_cluster.node_ids:  # as an operator upgrades a cluster: one at a time
        kafka_cluster.stop(node)
        j.send(600)
        j.wait_output(len(j.unique()))
        kafka_cluster.start(node)
        kafka_cluster.wait_in_sync(timeout=120)
    seen = j.finish()
    assert set(seen) == j.unique()
    assert [i for i, n in seen.items() if n > 1] == []


def test_a_node_frozen_past_every_timeout_stalls_nothing(
    job: Callable[..., Job], kafka_cluster: LocalCluster
) -> None:
    j = job(DEDUP, "unique", "exactly_once")
    j.start()
    j.send(600)
    j.wait_output(len(j.unique()))
    frozen = kafka_cluster.node_ids[0]
    kafka_cluster.pause(frozen)  # SIGSTOP: alive to the kernel, silent to everyone
    thawed_at = time.monotonic() + FROZEN_S  # the scenario's length, not a wait for anything
    j.send(600)
    j.wait_output(len(j.unique()))  # progress while it is frozen
    wait_until(lambda: time.monotonic() >= thawed_at, FROZEN_S + 10, what="the frozen spell")
    j.alive()
    kafka_cluster.resume(frozen)
    j.send(600)
    kafka_cluster.wait_in_sync(timeout=120)
    seen = j.finish()
    assert set(seen) == j.unique()
    assert [i for i, n in seen.items() if n > 1] == []
