"""Static membership on the real broker: an instance killed with SIGKILL and restarted on
the same machine takes its own partitions back at once, and the other instance keeps its
partitions throughout (no rebalance).

Two `streams run` instances of one app share a state dir, so each claims a numbered slot;
the restart claims the slot the killed one held, and with it the same group.instance.id.
The session timeout is 30 s: a dynamic member's partitions would wait that long for the
coordinator to expire the dead member (``streams.bench.restart`` measures both).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import factories
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.schemas import default_catalog
from streams.testing import TopicFactory, TopicReader, produce_envelopes, wait_until
from streams.testing.topics import unique_topic_name
from streams.testing.topology_process import TopologyProcess

ROOT = Path(__file__).resolve().parents[2]
MIRROR = ROOT / "topology" / "mirror.py"
PARTITIONS, PER_BATCH = 4, 400
SESSION_S = 30


def orders(first: int, count: int) -> list[Envelope]:
    return factories.orders(range(first, first + count), customers=40)


def members(admin: AdminClient, group: str) -> dict[str, tuple[int, ...]]:
    """group.instance.id -> the partitions the member holds."""
    desc = admin.describe_consumer_groups([group])[group].result(timeout=10)
    return {
        m.group_instance_id: tuple(sorted(tp.partition for tp in m.assignment.topic_partitions))
        for m in desc.members
    }


def settled(admin: AdminClient, group: str) -> dict[str, tuple[int, ...]] | None:
    """The members once two hold two partitions each (else None)."""
    try:
        found = members(admin, group)
    except KafkaException:  # a coordinator still loading: asked again
        return None
    sizes = sorted(len(parts) for parts in found.values())
    return found if sizes == [2, 2] else None


def revokes(proc: TopologyProcess) -> int:
    return len(re.findall(r"partitions revoked", proc.output()))


def test_a_static_member_restarted_after_sigkill_takes_its_partitions_back_at_once(
    kafka_bootstrap: str, kafka_admin: AdminClient, make_topic: TopicFactory, tmp_path: Path
) -> None:
    codec = AvroCodec(default_catalog())
    topic = make_topic("static-in", partitions=PARTITIONS)
    app_id = unique_topic_name("static")
    args = [
        "--static-membership", "--state-dir", str(tmp_path / "state"),
        f"-Xconsumer.session.timeout.ms={SESSION_S * 1000}",
    ]  # fmt: skip

    def instance() -> TopologyProcess:
        return TopologyProcess(
            MIRROR, kafka_bootstrap, app_id=app_id, settings={"input": topic}, args=args
        )

    a, b = instance().start(), instance().start()
    restarted: TopologyProcess | None = None
    procs = [a, b]
    try:
        a.wait_started(assigned=True)
        b.wait_started(assigned=True)
        wait_until(lambda: settled(kafka_admin, app_id) is not None, 60, what="2 + 2 partitions")
        before = settled(kafka_admin, app_id)
        assert before is not None and all(name.startswith(f"{app_id}-") for name in before)
        produce_envelopes(kafka_bootstrap, topic, orders(0, PER_BATCH), codec)
        with TopicReader(kafka_bootstrap, f"{app_id}-mirror") as reader:
            reader.wait_for(lambda rs: len(rs) >= PER_BATCH, 60, what="the first outputs")
            b_revokes = revokes(b)

            a.kill()  # its slot's lock goes with it; its member stays until the session ends
            produce_envelopes(kafka_bootstrap, topic, orders(PER_BATCH, PER_BATCH), codec)
            started = time.monotonic()
            restarted = instance().start()
            procs.append(restarted)
            reader.wait_for(lambda rs: len(rs) >= 2 * PER_BATCH, 60, what="every output")
            took = time.monotonic() - started

        after = members(kafka_admin, app_id)
        assert after == before  # the same ids hold the same partitions
        assert revokes(b) == b_revokes  # the other instance gave nothing up
        # a dynamic member waits for the session to expire (30 s) before a rebalance
        assert took < SESSION_S / 2, f"restart to every output took {took:.1f} s"
        print(f"static restart to every output: {took:.1f} s")
    except Exception:
        for name, proc in (("a", a), ("b", b), ("restarted", restarted)):
            if proc is not None:
                print(f"--- {name}:\n{proc.output(30)}")
        raise
    finally:
        for proc in procs:
            proc.close()
