"""Work queues on a share group (KIP-932) on a real broker: ``topology/labels.py`` run by
three workers. Every request is booked once; one in a hundred fails its first two
deliveries and is booked on the third, by whichever worker got it; the ones no carrier
serves are in the DLQ after three deliveries, with the error headers."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

from streams.envelope import Envelope
from streams.examples import example_path
from streams.failures.headers import parse_failure_headers
from streams.testing import KafkaIO, TopicFactory, TopicReader, TopologyProcess, wait_until

LABELS = example_path("labels")
COUNT, REFUSED = 1_000, 5


def requests() -> list[Envelope]:
    now = datetime.now(UTC)
    out = []
    for n in range(COUNT):
        carrier = "nowhere" if n % (COUNT // REFUSED) == 7 else ("dhl", "ups")[n % 2]
        data = {"order_id": f"o-{n}", "carrier": carrier, "requested_at": now}
        out.append(Envelope.new("shipment.requested", data, key=f"o-{n}", source="test"))
    return out


def test_three_workers_book_each_request_once_and_dead_letter_what_no_carrier_takes(
    kafka_bootstrap: str, kafka_io: KafkaIO, make_topic: TopicFactory, app_id: str
) -> None:
    topic = make_topic(partitions=2)  # fewer partitions than workers: a share group's point
    sent = kafka_io.produce(topic, requests())
    workers = [
        TopologyProcess(LABELS, kafka_bootstrap, app_id=app_id, settings={"input": topic})
        for _ in range(3)
    ]
    try:
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.wait_started()
        booked = TopicReader(kafka_bootstrap, f"{app_id}-booked")
        dead = TopicReader(kafka_bootstrap, f"{app_id}-{topic}-dlq")
        with booked, dead:

            def done() -> bool:
                for worker in workers:
                    worker.check()
                booked.poll(0.2)
                dead.poll(0.2)
                return len(booked.records) >= COUNT - REFUSED and len(dead.records) >= REFUSED

            wait_until(done, timeout=180, what="every request booked or dead-lettered")
            booked.poll(1.0)  # anything written twice would be here by now
            dead.poll(0.5)
            ids = Counter(
                kafka_io.codec.decode(m.value(), m.headers()).causation_id for m in booked.records
            )
            failures = [parse_failure_headers(m.headers()) for m in dead.records]
    finally:
        for worker in workers:
            worker.close()
    refused = {e.id for e in sent if e.data["carrier"] == "nowhere"}
    assert set(ids) == {e.id for e in sent} - refused
    assert set(ids.values()) == {1}  # each booked once
    assert len(failures) == REFUSED
    assert {f.error_type for f in failures} == {"CarrierRefused"}
    assert {f.attempts for f in failures} == {3}
    assert {f.step for f in failures} == {"book"}
