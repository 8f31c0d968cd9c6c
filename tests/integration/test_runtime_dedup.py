"""``dedup()`` on the real broker with `streams run` instances: an id is processed once.

The same envelope arrives three times: once normally, once after the instance restarted,
and once after its partition moved to another instance (another state directory, as on
another machine: the store comes back from its changelog). One output.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import factories
from cli_runner import streams
from confluent_kafka import KafkaException, Message
from confluent_kafka.admin import AdminClient

from streams.cluster import create_topic
from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.schemas import default_catalog
from streams.testing import (
    TopicFactory,
    TopicReader,
    TopologyProcess,
    caught_up,
    produce_envelopes,
    wait_until,
)

ROOT = Path(__file__).resolve().parents[2]
DEDUP = ROOT / "topology" / "dedup.py"
PARTITIONS = 2
FAST_REBALANCE = ["-Xconsumer.session.timeout.ms=6000", "-Xconsumer.heartbeat.interval.ms=1000"]


def order(n: int) -> Envelope:
    return factories.order(n, f"c-{n}")


def members(admin: AdminClient, group: str) -> int:
    try:
        return len(admin.describe_consumer_groups([group])[group].result(timeout=10).members)
    except KafkaException:
        return -1


def test_an_id_sent_three_times_across_a_restart_and_a_move_is_processed_once(
    kafka_bootstrap: str,
    kafka_admin: AdminClient,
    make_topic: TopicFactory,
    app_id: str,
    tmp_path: Path,
) -> None:
    codec = AvroCodec(default_catalog())
    topic = make_topic("dedup-in", partitions=PARTITIONS)
    twice = order(0)
    others = [order(n) for n in range(1, 6)]

    def instance(where: str) -> TopologyProcess:
        args = ["--state-dir", str(tmp_path / where), *FAST_REBALANCE]
        return TopologyProcess(
            DEDUP, kafka_bootstrap, app_id=app_id, settings={"input": topic}, args=args
        )

    def send(envs: list[Envelope]) -> None:
        produce_envelopes(kafka_bootstrap, topic, envs, codec)
        wait_until(lambda: caught_up(kafka_bootstrap, app_id, topic), 90, what="processed")

    a = instance("machine-a")
    b = instance("machine-b")
    with TopicReader(kafka_bootstrap, f"{app_id}-unique") as reader:
        try:
            a.start().wait_started(60, assigned=True)
            send([twice, *others[:2]])  # 1: normally

            assert a.stop() == 0
            a.start().wait_started(60, assigned=True)
            send([twice, others[2]])  # 2: after a restart of the instance

            b.start().wait_started(60)
            wait_until(lambda: members(kafka_admin, app_id) == 2, 60, what="2 members")
            assert a.stop() == 0  # every partition moves to b, restored from the changelog
            wait_until(lambda: "restored store partition" in b.output(), 60, what="b restored")
            send([twice, *others[3:]])  # 3: after its partition moved
            assert b.stop() == 0
            reader.wait_for(lambda rs: len(rs) >= 1 + len(others), 60, what="outputs")
            reader.poll(1.0)  # anything more that would be wrong arrives now, or never
            logs = {"a": a.output(), "b": b.output()}
        except Exception:
            print(a.output(), "\n---\n", b.output())
            raise
        finally:
            a.close()
            b.close()
        outputs = [codec.decode(m.value(), cast(Any, m.headers())) for m in reader.records]

    ids = [env.id for env in outputs]
    assert sorted(ids) == sorted(e.id for e in [twice, *others])  # once each, none lost
    assert ids.count(twice.id) == 1
    # each redelivery counted as a duplicate: a's second run, then b
    assert "duplicates=1" in logs["a"] and "duplicates=1" in logs["b"]


FLAKY_STEP = """
from pathlib import Path
from streams.topology import TopologyBuilder, owned

def build(app_id="flaky", input="orders", broken=""):
    def check(env):
        if env.data["total_cents"] == 2 and Path(broken).exists():
            raise RuntimeError("the service is down")
        return env
    b = TopologyBuilder(app_id)
    s = b.source(input, type="order.placed", version=2)
    s.dedup(ttl=3600).map(check).to(owned("unique"), type="order.placed", version=2)
    return b.build()
"""


def test_a_record_that_failed_after_dedup_is_processed_when_it_comes_again(
    kafka_bootstrap: str, make_topic: TopicFactory, app_id: str, tmp_path: Path
) -> None:
    """The dedup mark of a failed record is never checkpointed (nor anything of its
    partition after the last commit): after the fix, the redelivered record is processed,
    not taken for a duplicate."""
    codec = AvroCodec(default_catalog())
    topic = make_topic("dedup-in", partitions=PARTITIONS)
    path = tmp_path / "flaky.py"
    path.write_text(FLAKY_STEP)
    broken = tmp_path / "broken"
    broken.touch()
    settings = {"input": topic, "broken": str(broken)}
    args = ["--state-dir", str(tmp_path / "state")]
    good, failing = (order(n).with_data(order(n).data, key="same") for n in (1, 2))
    produce_envelopes(kafka_bootstrap, topic, [good, failing], codec)  # one partition
    with TopologyProcess(path, kafka_bootstrap, app_id=app_id, settings=settings, args=args) as run:
        wait_until(lambda: not run.running, 60, what="the run to stop on the failed record")
        assert run.stop() == 1
        assert "the service is down" in run.output()
    broken.unlink()  # fixed
    with (
        TopologyProcess(path, kafka_bootstrap, app_id=app_id, settings=settings, args=args) as run,
        TopicReader(kafka_bootstrap, f"{app_id}-unique") as reader,
    ):
        reader.wait_for(lambda rs: len(rs) >= 2, 60, what="the outputs after the fix")
    # good's offset may be committed or not (at-least-once): failing is never dropped
    assert set(ce_ids(reader.records)) == {good.id, failing.id}


def ce_ids(records: Sequence[Message]) -> list[str]:
    return [dict(cast(Any, m.headers()))["ce_id"].decode() for m in records]


def test_a_changelog_with_the_wrong_partition_count_stops_the_run_before_anything_is_processed(
    kafka_bootstrap: str,
    kafka_admin: AdminClient,
    make_topic: TopicFactory,
    app_id: str,
    tmp_path: Path,
) -> None:
    topic = make_topic("dedup-in", partitions=PARTITIONS)
    create_topic(kafka_admin, f"{app_id}-dedup-changelog", 3, {"cleanup.policy": "compact"})
    produce_envelopes(kafka_bootstrap, topic, [order(1)], AvroCodec(default_catalog()))
    done = streams(
        "run", str(DEDUP), "--app-id", app_id, "--set", f"input={topic}", "--no-status",
        "--state-dir", str(tmp_path), bootstrap=kafka_bootstrap,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: changelog topic '{app_id}-dedup-changelog' has 3 partitions but the input "
        "has 2: a store partition must map to exactly one changelog partition; delete the "
        "changelog topic (its state is lost) or give the input the same partition count"
    )
    assert not caught_up(kafka_bootstrap, app_id, topic)  # nothing committed
    ends = kafka_admin.list_topics(f"{app_id}-unique", timeout=10).topics.get(f"{app_id}-unique")
    if ends is not None and ends.error is None:  # the output may exist: it holds nothing
        with TopicReader(kafka_bootstrap, f"{app_id}-unique") as reader:
            assert reader.poll(1.0) == []


FIRST_PER_CUSTOMER = """
from streams.topology import TopologyBuilder, owned

def build(app_id="first", input="orders"):
    b = TopologyBuilder(app_id)
    b.source(input, type="order.placed", version=2).rekey(
        lambda e: e.data["customer_id"], name="by-customer"
    ).dedup(ttl=3600, by=lambda e: e.key, name="first").to(
        owned("first"), type="order.placed", version=2
    )
    return b.build()
"""


def test_rekey_then_dedup_by_the_new_key_drops_exactly_its_duplicates_across_a_restart(
    kafka_bootstrap: str, make_topic: TopicFactory, app_id: str, tmp_path: Path
) -> None:
    codec = AvroCodec(default_catalog())
    topic = make_topic("rekey-in", partitions=4)
    path = tmp_path / "first_per_customer.py"
    path.write_text(FIRST_PER_CUSTOMER)

    def placed(n: int, customer: str) -> Envelope:
        data = {"order_id": f"o-{n}", "customer_id": customer, "items": [], "total_cents": n}
        # keyed by the order: a customer's orders spread over every input partition
        return Envelope.new("order.placed", {**data, "currency": "EUR"}, version=2, key=f"o-{n}")

    first = [placed(n, f"c-{n % 3}") for n in range(12)]  # c-0, c-1, c-2: four orders each
    later = [placed(n, f"c-{n % 4}") for n in range(12, 20)]  # and c-3, new
    instance = TopologyProcess(
        path,
        kafka_bootstrap,
        app_id=app_id,
        settings={"input": topic},
        args=["--state-dir", str(tmp_path / "state")],
    )
    with TopicReader(kafka_bootstrap, f"{app_id}-first") as reader:
        try:
            instance.start().wait_started(60, assigned=True)
            produce_envelopes(kafka_bootstrap, topic, first, codec)
            reader.wait_for(lambda rs: len(rs) >= 3, 60, what="one order per customer")
            assert instance.stop() == 0
            instance.start().wait_started(60, assigned=True)
            produce_envelopes(kafka_bootstrap, topic, later, codec)
            reader.wait_for(lambda rs: len(rs) >= 4, 60, what="c-3's first order")
            reader.poll(2.0)  # a duplicate let through would arrive now
            assert instance.stop() == 0
        except Exception:
            print(instance.output())
            raise
        finally:
            instance.close()
        outputs = [codec.decode(m.value(), cast(Any, m.headers())) for m in reader.records]
    # one order per customer, c-3's from the second run (which of a customer's orders came
    # first is not fixed: they were on different input partitions until the rekey)
    assert sorted(env.key or "" for env in outputs) == ["c-0", "c-1", "c-2", "c-3"]
    sent = {e.data["order_id"]: e.data["customer_id"] for e in [*first, *later]}
    assert all(sent[env.data["order_id"]] == env.key for env in outputs)
    (c3,) = [env for env in outputs if env.key == "c-3"]
    assert c3.data["order_id"] in {e.data["order_id"] for e in later}
