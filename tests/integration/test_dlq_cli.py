"""``streams dlq`` on a real broker, over dead letters routed the way the runtime routes them.

Input records are written to a source topic by a plain producer, read back, "processed"
(decoded with the real codec; a processor that fails for some), and each failure is
routed with ``FailureRouter`` until it lands in the DLQ. The CLI then runs as a user runs
it, in this process (tests/cli_runner.py).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import factories
import pytest
from cli_runner import streams
from confluent_kafka import Consumer, Message, Producer, TopicPartition
from confluent_kafka.admin._config import ConfigResource

from streams.cluster import Topics, create_topic, partition_count
from streams.codec import AvroCodec, DecodeError
from streams.dlq import dlq_depth
from streams.envelope import Envelope
from streams.failures import headers as h
from streams.failures.errors import FailureTopicError
from streams.failures.headers import Stage
from streams.failures.policy import RetryPolicy
from streams.failures.routing import FailedRecord, FailureRouter
from streams.failures.topics import FailureTopics, ensure_failure_topics
from streams.schemas import SchemaCatalog
from streams.testing.topics import TopicFactory

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "schemas"


class OutOfStockError(Exception):
    """The test processor's permanent failure (non-retryable)."""


SKU_1 = {"sku": "sku-1", "quantity": 1, "unit_price_cents": 250}
order = partial(factories.order, version=1, items=[SKU_1], total_cents=250)


def produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes, list[Any]]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    errors: list[object] = []
    for key, value, headers in records:
        producer.produce(
            topic,
            key=key,
            value=value,
            headers=headers,
            on_delivery=lambda err, _m: errors.append(err) if err else None,
        )
    assert producer.flush(30) == 0
    assert errors == []


def consume_all(bootstrap: str, topic: str, count: int, timeout: float = 30.0) -> list[Message]:
    """Read ``count`` records of ``topic`` from the start, or fail after ``timeout``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"test-{topic}-{time.monotonic_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    out: list[Message] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < count and time.monotonic() < deadline:
            out.extend(m for m in consumer.consume(100, timeout=0.5) if m.error() is None)
    finally:
        consumer.close()
    assert len(out) == count, f"read {len(out)} of {count} records from {topic}"
    return sorted(out, key=lambda m: (m.partition() or 0, m.offset() or 0))


def end_offsets(bootstrap: str, topic: str, partitions: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "test-watermarks"})
    try:
        return [
            consumer.get_watermark_offsets(TopicPartition(topic, p), 10)[1]
            for p in range(partitions)
        ]
    finally:
        consumer.close()


def cli_json(bootstrap: str, *args: str) -> Any:
    result = streams("dlq", *args, "--json", bootstrap=bootstrap)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def unknown_type_record(tmp_path: Path) -> tuple[bytes, list[tuple[str, bytes]]]:
    """A well-formed envelope of a type our catalog does not know (another team's)."""
    other = tmp_path / "schemas"
    shutil.copytree(SCHEMAS, other)
    (other / "order.lost").mkdir()
    (other / "order.lost" / "v1.avsc").write_text(
        json.dumps(
            {
                "type": "record",
                "name": "OrderLost",
                "fields": [{"name": "order_id", "type": "string"}],
            }
        )
    )
    codec = AvroCodec(SchemaCatalog.load(other, check=False))
    value, headers = codec.encode(Envelope.new("order.lost", {"order_id": "o-9"}, key="c-9"))
    return value, list(headers)


@dataclass
class Dlq:
    topics: FailureTopics
    source: str
    originals: dict[bytes, Message]  # by key


@pytest.fixture
def dlq(kafka_bootstrap: str, kafka_admin: Any, make_topic: TopicFactory, tmp_path: Path) -> Dlq:
    """A source topic with 8 records; 5 of them end in the DLQ for different reasons."""
    codec = AvroCodec(SchemaCatalog.load(SCHEMAS))
    source = make_topic("orders", partitions=3)
    app = f"shop{time.monotonic_ns() % 10**8}"
    policy = RetryPolicy.parse("1s, 30s", non_retryable=[OutOfStockError])
    topics = ensure_failure_topics(
        Topics(kafka_admin), FailureTopics.for_input(app, source, policy)
    )
    make_topic.created.extend(topics.all)

    inputs: list[tuple[bytes, bytes, list[Any]]] = []
    for i, customer in enumerate(["c-1", "c-2", "c-3", "c-4", "c-5", "c-6"]):
        value, headers = codec.encode(order(f"o-{i}", customer))
        inputs.append((customer.encode(), value, list(headers)))
    inputs.append((b"c-7", b"\x00\xffnot avro at all", [("origin", b"legacy")]))
    value, headers = unknown_type_record(tmp_path)
    inputs.append((b"c-9", value, headers))
    produce(kafka_bootstrap, source, inputs)

    router = FailureRouter(app, policy)
    dead: list[tuple[bytes, bytes, list[Any]]] = []
    originals: dict[bytes, Message] = {}
    for message in consume_all(kafka_bootstrap, source, len(inputs)):
        key = message.key()
        assert key is not None
        originals[key] = message
        record = FailedRecord.from_message(message)
        assert record.coordinates.topic == source
        assert (record.coordinates.partition, record.coordinates.offset) == (
            message.partition(),
            message.offset(),
        )
        try:
            envelope = codec.decode(message.value(), record.headers)
        except DecodeError as exc:
            route = router.route(record, exc, stage=Stage.DECODE)
            assert route.dead_letter
            dead.append((route.key or b"", route.value or b"", route.headers))
            continue
        customer = envelope.data["customer_id"]
        failure: Exception | None = None
        if customer in ("c-1", "c-2"):
            failure = ValueError(f"no price list for {customer}")  # fails on every attempt
        elif customer == "c-3":
            failure = OutOfStockError("sku-1")
        if failure is None:
            continue
        route = router.route(record, failure, step="price")
        while not route.dead_letter:  # what the retry tiers would do: fail again each time
            record = FailedRecord(route.key, route.value, route.headers, record.coordinates)
            route = router.route(record, failure, step="price")
        dead.append((route.key or b"", route.value or b"", route.headers))
    produce(kafka_bootstrap, topics.dlq, dead)
    return Dlq(topics, source, originals)


def test_failure_topics_have_the_inputs_partitions(kafka_admin: Any, dlq: Dlq) -> None:
    app, source = dlq.topics.app_id, dlq.source
    assert dlq.topics.all == (
        f"{app}-{source}-retry-1",
        f"{app}-{source}-retry-2",
        f"{app}-{source}-dlq",
    )
    assert [partition_count(kafka_admin, t) for t in dlq.topics.all] == [3, 3, 3]
    # The DLQ never expires records; retry tiers keep the broker's default retention.
    assert topic_config(kafka_admin, dlq.topics.dlq)["retention.ms"] == "-1"
    assert topic_config(kafka_admin, dlq.topics.retries[0])["retention.ms"] != "-1"
    # Creating them again is harmless; a tier with another partition count is refused.
    ensure_failure_topics(Topics(kafka_admin), dlq.topics)
    kafka_admin.delete_topics([dlq.topics.retries[1]])[dlq.topics.retries[1]].result(30)
    wait_gone(kafka_admin, dlq.topics.retries[1])
    create_topic(kafka_admin, dlq.topics.retries[1], partitions=1)
    with pytest.raises(FailureTopicError, match="has 1 partitions but its input"):
        ensure_failure_topics(Topics(kafka_admin), dlq.topics)


def topic_config(admin: Any, topic: str) -> dict[str, str]:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(30)
    return {name: entry.value for name, entry in entries.items()}


def wait_gone(admin: Any, topic: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while topic in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, f"{topic} still listed after deletion"
        time.sleep(0.1)


def test_list_counts_dead_letters_per_error_and_source(kafka_bootstrap: str, dlq: Dlq) -> None:
    summary = cli_json(kafka_bootstrap, "list", dlq.topics.dlq)
    assert summary["total"] == 5
    assert summary["by_error"] == {
        "ValueError": 2,
        f"{__name__}.OutOfStockError": 1,
        "streams.codec.errors.MalformedRecordError": 1,
        "streams.codec.errors.UnknownTypeError": 1,
    }
    assert summary["by_source"] == {dlq.source: 5}
    assert summary["oldest"] <= summary["newest"]
    assert (summary["replayed"], summary["replays"]) == (0, 0)

    table = streams("dlq", "list", dlq.topics.dlq, bootstrap=kafka_bootstrap)
    assert table.returncode == 0, table.stderr
    assert "5 dead letter(s)" in table.stdout
    assert "MalformedRecordError" in table.stdout


def test_show_decodes_envelopes_and_filters(kafka_bootstrap: str, dlq: Dlq) -> None:
    shown = cli_json(kafka_bootstrap, "show", dlq.topics.dlq, "--error-type", "ValueError")
    assert sorted(v["key"] for v in shown) == ["c-1", "c-2"]
    for view in shown:
        error = view["error"]
        assert error["attempts"] == 3  # the first attempt and one per tier
        assert error["step"] == "price"
        assert error["source"]["topic"] == dlq.source
        original = dlq.originals[view["key"].encode()]
        assert error["source"]["offset"] == original.offset()
        assert view["envelope"]["type"] == "order.placed"
        assert view["envelope"]["data"]["customer_id"] == view["key"]
        assert view["event_id"] == view["envelope"]["id"]

    (garbage,) = cli_json(kafka_bootstrap, "show", dlq.topics.dlq, "--key", "c-7")
    assert garbage["error"]["stage"] == "decode"
    assert garbage["error"]["attempts"] == 1
    assert garbage["headers"] == {"origin": "legacy"}
    assert garbage["envelope"] is None
    assert garbage["decode_error"].startswith("MalformedRecordError")

    (unknown,) = cli_json(
        kafka_bootstrap, "show", dlq.topics.dlq, "--error-type", "UnknownTypeError"
    )
    assert unknown["key"] == "c-9"
    assert unknown["event_type"] == "order.lost"

    assert cli_json(kafka_bootstrap, "show", dlq.topics.dlq, "--since", "1h") != []
    assert cli_json(kafka_bootstrap, "show", dlq.topics.dlq, "--until", "1h") == []


def test_replay_is_a_dry_run_by_default_and_execute_sends_exactly_the_chosen(
    kafka_bootstrap: str, dlq: Dlq
) -> None:
    before = end_offsets(kafka_bootstrap, dlq.source, 3)
    dlq_before = end_offsets(kafka_bootstrap, dlq.topics.dlq, 3)

    dry = cli_json(kafka_bootstrap, "replay", dlq.topics.dlq, "--error-type", "ValueError")
    assert dry["dry_run"] is True
    assert dry["sent"] == 0
    assert sorted(r["key"] for r in dry["records"]) == ["c-1", "c-2"]
    text = streams("dlq", "replay", dlq.topics.dlq, "-e", "ValueError", bootstrap=kafka_bootstrap)
    assert "dry run: nothing sent" in text.stdout
    assert end_offsets(kafka_bootstrap, dlq.source, 3) == before
    assert end_offsets(kafka_bootstrap, dlq.topics.dlq, 3) == dlq_before

    done = cli_json(
        kafka_bootstrap, "replay", dlq.topics.dlq, "--error-type", "ValueError", "--execute"
    )
    assert done["dry_run"] is False
    assert done["sent"] == 2
    after = end_offsets(kafka_bootstrap, dlq.source, 3)
    assert sum(after) - sum(before) == 2

    replayed = consume_all(kafka_bootstrap, dlq.source, sum(after))
    new = [m for m in replayed if (m.offset() or 0) >= before[m.partition() or 0]]
    assert sorted(m.key() or b"" for m in new) == [b"c-1", b"c-2"]
    for message in new:
        original = dlq.originals[message.key() or b""]
        assert message.value() == original.value()
        assert message.partition() == original.partition()
        headers = list(FailedRecord.from_message(message).headers)
        names = [name for name, _ in headers]
        original_headers = list(FailedRecord.from_message(original).headers)
        assert headers[: len(original_headers)] == original_headers
        assert h.REPLAY_OF in names
        assert h.REPLAY_TIME in names
        assert not set(names) & h.FAILURE_HEADERS

    summary = cli_json(kafka_bootstrap, "list", dlq.topics.dlq)
    assert summary["total"] == 5  # replay marks are not dead letters
    assert dlq_depth(kafka_bootstrap, dlq.topics.dlq) == 5 + 2  # ...but they are records
    assert (summary["replayed"], summary["replays"]) == (2, 2)
    shown = cli_json(kafka_bootstrap, "show", dlq.topics.dlq, "--key", "c-1")
    assert [r["to"] for r in shown[0]["replays"]] == [dlq.source]


def test_replay_to_a_missing_topic_fails_cleanly_and_sends_nothing(
    kafka_bootstrap: str, dlq: Dlq
) -> None:
    before = end_offsets(kafka_bootstrap, dlq.topics.dlq, 3)
    result = streams(
        "dlq",
        "replay",
        dlq.topics.dlq,
        "--to",
        "no-such-topic-x1",
        "--execute",
        bootstrap=kafka_bootstrap,
    )
    assert result.returncode == 1
    assert "no-such-topic-x1" in result.stderr
    assert "Traceback" not in result.stderr
    assert end_offsets(kafka_bootstrap, dlq.topics.dlq, 3) == before


def test_a_missing_dlq_topic_is_a_one_line_error(kafka_bootstrap: str) -> None:
    result = streams("dlq", "list", "no-such-app-orders-dlq", bootstrap=kafka_bootstrap)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "error: no topic 'no-such-app-orders-dlq' (is the app id or topic name right?)"
    )


def test_an_empty_dlq_lists_as_empty(kafka_bootstrap: str, make_topic: TopicFactory) -> None:
    empty = make_topic("app-orders-dlq")
    summary = cli_json(kafka_bootstrap, "list", empty)
    assert (summary["total"], summary["by_error"], summary["oldest"]) == (0, {}, None)
    assert cli_json(kafka_bootstrap, "replay", empty, "--execute")["sent"] == 0


def test_a_topic_that_is_no_dlq_is_refused_in_one_line(kafka_bootstrap: str, dlq: Dlq) -> None:
    """The source topic holds records, none with error headers: no summary of zeros."""
    for command in ("list", "show"):
        result = streams("dlq", command, dlq.source, bootstrap=kafka_bootstrap)
        assert result.returncode == 1
        assert result.stderr.strip() == (
            f"error: {dlq.source} holds no dead letters: 8 record(s) without error headers "
            "(is it a DLQ?)"
        )
        assert result.stdout == ""
