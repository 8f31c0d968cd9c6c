"""Known data for the replay and offsets tests (imported by them; holds no tests).

Four partitions, records at explicit timestamps ten minutes apart, starting
``BASE_AGO`` before now plus half a five-minute step, so that a duration ago never lands
within seconds of a record (Kafka's tool computes "now" a moment after us):

* p0: 10 records at ``t0 + i*10min``
* p1: 5 records at ``t0 + 30min + i*10min``
* p2: empty
* p3: 20 records at ``t0 + i*5min``, the first 3 deleted (log start 3)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

MIN = 60_000
BASE_AGO = 10 * 60 * MIN
TYPES = ("order.placed", "order.shipped")


@dataclass
class Seeded:
    topic: str
    t0: int
    # partition -> [(offset, timestamp, key, ce_type)], records still in the log
    records: dict[int, list[tuple[int, int, bytes, str]]] = field(default_factory=dict)

    def log_start(self, p: int) -> int:
        return 3 if p == 3 else 0

    def log_end(self, p: int) -> int:
        return {0: 10, 1: 5, 2: 0, 3: 20}[p]

    def offset_for_time(self, p: int, ms: int) -> int:
        """The expected answer: first record at or after ``ms``, else the log end."""
        for offset, ts, _, _ in self.records[p]:
            if ts >= ms:
                return offset
        return self.log_end(p)


def seed(bootstrap: str, admin: AdminClient, topic: str) -> Seeded:
    """Produce the known records into ``topic`` (4 partitions), wait for every ack, and
    delete p3's first three records."""
    now = time.time_ns() // 1_000_000
    t0 = now - BASE_AGO - 150_000
    plan: dict[int, list[int]] = {
        0: [t0 + i * 10 * MIN for i in range(10)],
        1: [t0 + 30 * MIN + i * 10 * MIN for i in range(5)],
        2: [],
        3: [t0 + i * 5 * MIN for i in range(20)],
    }
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    failed: list[object] = []
    seeded = Seeded(topic, t0)
    for p, stamps in plan.items():
        seeded.records[p] = []
        for i, ts in enumerate(stamps):
            key = f"k{p}-{i}".encode()
            ce_type = TYPES[i % 2]
            producer.produce(
                topic,
                key=key,
                value=f"v{p}-{i}".encode(),
                partition=p,
                timestamp=ts,
                headers=[("ce_type", ce_type.encode()), ("trace", b"t")],
                on_delivery=lambda err, _m: failed.append(err) if err else None,
            )
            seeded.records[p].append((i, ts, key, ce_type))
    assert producer.flush(30) == 0 and not failed
    deleted = admin.delete_records([TopicPartition(topic, 3, 3)], request_timeout=30)
    for future in deleted.values():
        future.result(30)
    seeded.records[3] = seeded.records[3][3:]
    return seeded
