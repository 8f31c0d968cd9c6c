"""Timers on the real broker: ``topology/digest.py`` through a SIGKILL and a restart.

The example adds each order to its customer's total in a store and a stream-time timer
writes and clears the totals every minute of event time. A timer's writes and deletes
commit with the partition's offsets: killed mid-stream and restarted, exactly-once's
read_committed digests hold every order exactly once; at-least-once's lose none (an
order may be in two digests: its effects may be repeated, never lost).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from confluent_kafka import Message

from streams.codec import AvroCodec
from streams.schemas import default_catalog
from streams.testing import TopicFactory, TopicReader, TopologyProcess, produce_envelopes
from streams.topology.loader import import_file
from streams.topology.partitioning import partition_for

ROOT = Path(__file__).resolve().parents[2]
DIGEST = ROOT / "topology" / "digest.py"
PARTITIONS = 4
BASE = datetime(2026, 1, 1, tzinfo=UTC)
FAST_REBALANCE = ["-Xconsumer.session.timeout.ms=6000", "-Xconsumer.heartbeat.interval.ms=1000"]


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_a_sigkill_between_digests_loses_no_order_and_exactly_once_writes_none_twice(
    guarantee: str, kafka_bootstrap: str, make_topic: TopicFactory, app_id: str, tmp_path: Path
) -> None:
    source = make_topic("digest-in", partitions=PARTITIONS)
    sample = import_file(ROOT / "topology" / "orders.py").sample_orders(1_600, customers=16, seed=9)
    orders = [replace(o, time=BASE + timedelta(seconds=i)) for i, o in enumerate(sample)]
    # A last order per partition an hour on: its timer writes what is left.
    last = {partition_for((o.key or "").encode(), PARTITIONS): o for o in orders}
    ends = [replace(o, time=BASE + timedelta(hours=1)) for o in last.values()]
    assert len(ends) == PARTITIONS
    plain = Counter(o.key for o in [*orders, *ends])
    codec = AvroCodec(default_catalog())
    args = ["--guarantee", guarantee, "--state-dir", str(tmp_path / "state"), *FAST_REBALANCE]

    def instance() -> TopologyProcess:
        return TopologyProcess(
            DIGEST, kafka_bootstrap, app_id=app_id, settings={"input": source}, args=args
        )

    def written(records: list[Message]) -> Counter[str]:
        counts: Counter[str] = Counter()
        for m in records:
            data = codec.decode(m.value(), m.headers()).data
            counts[data["customer_id"]] += data["orders"]
        return counts

    committed: dict[str, object] = {"isolation.level": "read_committed"}
    with TopicReader(kafka_bootstrap, f"{app_id}-digests", config=committed) as reader:
        crashed = instance().start()
        try:
            produce_envelopes(kafka_bootstrap, source, orders[:800], codec)
            reader.wait_for(lambda rs: len(rs) >= 40, 120, what="digests, mid-stream")
        finally:
            crashed.kill()
        produce_envelopes(kafka_bootstrap, source, [*orders[800:], *ends], codec)
        with instance():
            reader.wait_for(
                lambda rs: sum(written(rs).values()) >= plain.total(),
                120,
                what=f"digests of all {plain.total()} orders",
            )
            reader.poll(1.0)  # a digest written twice would be here by now
        found = written(reader.records)
    for customer, count in plain.items():
        assert found[customer] >= count, customer  # no order lost
    if guarantee == "exactly_once":
        assert found == plain  # each order in one committed digest
