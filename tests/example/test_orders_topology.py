"""A user's test of their own topology, with nothing but the public ``streams.testing`` kit.

The same file runs against any of the three brokers:

    pytest tests/example                     # local: Kafka from the official jars
    pytest tests/example --kafka container   # a throwaway Kafka container (Docker)
    KAFKA_BOOTSTRAP_SERVERS=localhost:9092 pytest tests/example   # an existing cluster
"""

from __future__ import annotations

from collections.abc import Callable

from streams.testing import KafkaIO, TopicFactory, TopologyProcess, unique_topic_name
from topology.orders import enrich, is_valid, sample_orders, validate


def test_orders_are_accepted_or_rejected_with_a_reason(
    make_topic: TopicFactory,
    kafka_io: KafkaIO,
    run_topology: Callable[..., TopologyProcess],
) -> None:
    orders_topic = make_topic("orders", partitions=2)
    app = unique_topic_name("orders-app")  # its own app id: its own output topics
    run_topology("topology/orders.py", app_id=app, input=orders_topic)

    orders = kafka_io.produce(orders_topic, sample_orders(40))

    good = [o for o in orders if is_valid(enrich(validate(o)))]
    accepted = kafka_io.wait_for_envelopes(f"{app}-accepted", len(good))
    rejected = kafka_io.wait_for_envelopes(f"{app}-rejected", len(orders) - len(good))
    assert {e.data["order_id"] for e in accepted} == {o.data["order_id"] for o in good}
    assert {e.data["reason"] for e in rejected} <= {"INVALID", "LIMIT_EXCEEDED"}
    # Every output is caused by its order, and keeps the order's conversation.
    by_id = {o.id: o for o in orders}
    for out in accepted + rejected:
        assert out.correlation_id == by_id[out.causation_id].correlation_id
