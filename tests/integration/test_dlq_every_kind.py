"""``streams dlq replay`` and every command that changes a cluster, on a DLQ holding one
record of each kind the runtime writes: a value that is no envelope (no event id), a
foreign record (no envelope headers), no key, a value cut to fit, a decoded envelope, one
replayed before, and its replay mark.

The letters are routed with ``FailureRouter`` from records read back from a source topic,
as the runtime routes them. Commands run in-process (tests/cli_runner.py: its one-line
errors and exit codes are the point, not the process boundary); a crash, an exception
``main`` does not turn into a line, fails the test with its traceback.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from cli_runner import Run, streams
from confluent_kafka import Consumer, Message, Producer, TopicPartition

from streams.codec import AvroCodec
from streams.codec.errors import MalformedRecordError
from streams.dlq import execute_dlq_replay, plan_dlq_replay, read_dlq
from streams.envelope import Envelope
from streams.failures import headers as h
from streams.failures.headers import Stage
from streams.failures.policy import RetryPolicy
from streams.failures.routing import FailedRecord, FailureRouter
from streams.schemas import SchemaCatalog
from streams.testing.topics import TopicFactory

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
GARBAGE = b"\x00\xffnot avro at all"


def clean(run: Run, code: int = 0) -> Run:
    """``run`` ended with ``code``, no traceback, and an error (if any) in one line."""
    assert run.returncode == code, run.output
    assert "Traceback" not in run.output
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) <= 1
    if code not in (0, 130):  # the error is the last line, whole (notes may come before)
        assert errors == run.stderr.splitlines()[-1:], run.stderr
    return run


def produce(bootstrap: str, topic: str, records: list[dict[str, Any]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    failed: list[object] = []
    for record in records:
        producer.produce(
            topic, **record, on_delivery=lambda err, _m: failed.append(err) if err else None
        )
    assert producer.flush(30) == 0
    assert failed == []


def read_all(bootstrap: str, topic: str, partitions: int) -> list[Message]:
    """Every record of ``topic`` now, from its start to its end (bounded)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "test-read", "enable.partition.eof": True}
    )
    ends = {
        p: consumer.get_watermark_offsets(TopicPartition(topic, p), 10)[1]
        for p in range(partitions)
    }
    left = {p for p, end in ends.items() if end > 0}
    consumer.assign([TopicPartition(topic, p, 0) for p in left])
    out: list[Message] = []
    deadline = time.monotonic() + 30
    try:
        while left:
            assert time.monotonic() < deadline, f"{topic}: partitions {left} not read to the end"
            for message in consumer.consume(100, timeout=0.2):
                if message.error() is not None:
                    left.discard(message.partition() or 0)
                    continue
                out.append(message)
                if (message.offset() or 0) >= ends[message.partition() or 0] - 1:
                    left.discard(message.partition() or 0)
    finally:
        consumer.close()
    return out


def replayed_refs(bootstrap: str, topic: str, partitions: int) -> Counter[str]:
    """How many times each dead letter came back to ``topic`` (its replay header)."""
    refs: Counter[str] = Counter()
    for message in read_all(bootstrap, topic, partitions):
        ref = h.header_text(message.headers(), h.REPLAY_OF)
        if ref is not None:
            refs[ref] += 1
    return refs


@dataclass
class Dlq:
    topic: str
    source: str
    refs: dict[str, str]  # kind -> <dlq>/<partition>/<offset>
    originals: dict[str, Message]  # kind -> the record as it was in the source topic

    def sendable(self) -> set[str]:
        """What a replay sends: not the cut one, not the one replayed before."""
        return {self.refs[k] for k in ("undecodable", "no_id", "no_key", "decoded")}


@pytest.fixture
def dlq(kafka_bootstrap: str, make_topic: TopicFactory) -> Dlq:
    codec = AvroCodec(SchemaCatalog.load(SCHEMAS))
    source = make_topic("payments", partitions=3)
    topic = make_topic("shop-payments-dlq", partitions=3)

    def envelope(n: int, items: int = 1) -> dict[str, Any]:
        value, headers = codec.encode(
            Envelope.new(
                "order.placed",
                {
                    "order_id": f"o-{n}",
                    "customer_id": f"c-{n}",
                    "items": [{"sku": "sku-1", "quantity": 1, "unit_price_cents": 250}] * items,
                    "total_cents": 250 * items,
                },
                key=f"c-{n}",
            )
        )
        return {"key": f"c-{n}".encode(), "value": value, "headers": list(headers)}

    inputs = {
        "undecodable": {"key": b"c-7", "value": GARBAGE, "headers": [("origin", b"legacy")]},
        "no_id": {"key": b"c-8", "value": b'{"order_id": "o-8"}'},
        "no_key": {**envelope(3), "key": None},
        "cut": envelope(4, items=80),
        "decoded": envelope(5),
        "replayed": envelope(6, items=150),  # over 1,000 bytes
    }
    for i, record in enumerate(inputs.values()):
        produce(kafka_bootstrap, source, [{**record, "partition": i % 3}])
    originals = {
        kind: message
        for kind, message in zip(
            inputs,
            sorted(read_all(kafka_bootstrap, source, 3), key=lambda m: m.timestamp()[1]),
            strict=True,
        )
    }
    policy = RetryPolicy.no_retries()
    letters = []
    for kind, message in originals.items():
        record = FailedRecord.from_message(message)
        stage = Stage.DECODE if kind == "undecodable" else Stage.PROCESS
        error = (
            MalformedRecordError("not an envelope")
            if kind == "undecodable"
            else (ValueError("no price list"))
        )
        max_bytes = len(message.value() or b"") if kind == "cut" else 1_000_000
        route = FailureRouter("shop", policy, max_bytes=max_bytes).route(record, error, stage=stage)
        letters.append({k: v for k, v in route.produce_args().items() if k != "topic"})
    assert h.VALUE_CUT in dict(letters[3]["headers"])
    for letter in letters:  # one at a time: their DLQ offsets follow their order here
        produce(kafka_bootstrap, topic, [letter])
    contents = read_dlq(kafka_bootstrap, topic)
    by_origin = {
        (d.failure.origin.partition, d.failure.origin.offset): d.ref
        for d in contents.letters
        if d.failure
    }
    refs = {kind: by_origin[(m.partition(), m.offset())] for kind, m in originals.items()}
    mark = [
        (h.REPLAY_MARK, refs["replayed"].encode()),
        (h.REPLAY_TO, source.encode()),
        (h.REPLAY_TIME, b"2026-11-29T12:00:00.000Z"),
    ]
    produce(kafka_bootstrap, topic, [{"key": None, "value": None, "headers": mark}])
    return Dlq(topic, source, refs, originals)


def test_a_dry_run_shows_every_kind_and_sends_nothing(kafka_bootstrap: str, dlq: Dlq) -> None:
    text = clean(streams("dlq", "replay", dlq.topic, bootstrap=kafka_bootstrap))
    row = next(line for line in text.stdout.splitlines() if dlq.refs["undecodable"] in line)
    assert "c-7" in row and "MalformedRecordError" in row and " - " in row
    assert f"skipped {dlq.refs['cut']}: its value was cut to fit the DLQ" in text.stderr
    assert "1 replayed already, not sent again (--again sends them too)" in text.stderr
    assert f"--execute sends 4 record(s) to {dlq.source} (4)" in text.stdout

    plan = json.loads(
        clean(streams("dlq", "replay", dlq.topic, "--json", bootstrap=kafka_bootstrap)).stdout
    )
    assert {r["ref"] for r in plan["records"]} == dlq.sendable()
    assert [r["ref"] for r in plan["skipped"]] == [dlq.refs["cut"]]
    assert [r["ref"] for r in plan["replayed_already"]] == [dlq.refs["replayed"]]
    assert replayed_refs(kafka_bootstrap, dlq.source, 3) == Counter()

    for command in ("list", "show"):
        for args in ((), ("--json",)):
            clean(streams("dlq", command, dlq.topic, *args, bootstrap=kafka_bootstrap))


def test_execute_sends_every_kind_once_and_a_rerun_sends_nothing(
    kafka_bootstrap: str, dlq: Dlq
) -> None:
    done = clean(streams("dlq", "replay", dlq.topic, "--execute", bootstrap=kafka_bootstrap))
    assert f"sent 4 record(s) to {dlq.source} (4)" in done.stdout
    back = {
        h.header_text(m.headers(), h.REPLAY_OF): m for m in read_all(kafka_bootstrap, dlq.source, 3)
    }
    undecodable = back[dlq.refs["undecodable"]]
    assert undecodable.value() == GARBAGE  # as it came, byte for byte
    assert undecodable.partition() == dlq.originals["undecodable"].partition()
    assert back[dlq.refs["no_key"]].key() is None

    again = clean(streams("dlq", "replay", dlq.topic, "--execute", bootstrap=kafka_bootstrap))
    assert "5 replayed already" in again.stderr and "nothing to send" in again.stdout
    assert replayed_refs(kafka_bootstrap, dlq.source, 3) == Counter(dlq.sendable())
    summary = json.loads(
        clean(streams("dlq", "list", dlq.topic, "--json", bootstrap=kafka_bootstrap)).stdout
    )
    assert (summary["total"], summary["replayed"]) == (6, 5)

    partition, offset = dlq.refs["no_key"].split("/")[-2:]
    forced = json.loads(
        clean(
            streams(
                "dlq",
                "replay",
                dlq.topic,
                "--record",
                f"{partition}:{offset}",
                "--again",
                "--execute",
                "--json",
                bootstrap=kafka_bootstrap,
            )
        ).stdout
    )
    assert forced["sent"] == 1
    assert replayed_refs(kafka_bootstrap, dlq.source, 3)[dlq.refs["no_key"]] == 2


class StopsAtThirdRecord(Producer):  # type: ignore[misc]
    """A producer that is interrupted (Ctrl-C) as it is about to send the third record."""

    sends = 0

    def produce(self, topic: str, *args: Any, **kwargs: Any) -> None:
        if h.REPLAY_MARK not in dict(kwargs.get("headers") or ()):
            StopsAtThirdRecord.sends += 1
            if StopsAtThirdRecord.sends == 3:
                raise KeyboardInterrupt
        super().produce(topic, *args, **kwargs)


def test_an_interrupted_replay_marks_what_it_sent_and_a_rerun_sends_only_the_rest(
    kafka_bootstrap: str, dlq: Dlq
) -> None:
    StopsAtThirdRecord.sends = 0
    with patch("streams.dlq.replay.Producer", StopsAtThirdRecord):
        stopped = clean(
            streams("dlq", "replay", dlq.topic, "--execute", bootstrap=kafka_bootstrap), 130
        )
    assert "interrupted: every record sent is marked as replayed" in stopped.stderr
    first = replayed_refs(kafka_bootstrap, dlq.source, 3)
    assert sum(first.values()) == 2
    marked = {mark.of for mark in read_dlq(kafka_bootstrap, dlq.topic).marks}
    assert set(first) <= marked  # everything that arrived is marked

    rest = clean(streams("dlq", "replay", dlq.topic, "--execute", bootstrap=kafka_bootstrap))
    assert f"sent 2 record(s) to {dlq.source} (2)" in rest.stdout
    assert replayed_refs(kafka_bootstrap, dlq.source, 3) == Counter(dlq.sendable())


def test_an_interruption_in_the_library_leaves_marks_for_what_was_acknowledged(
    kafka_bootstrap: str, dlq: Dlq
) -> None:
    def stop_at_second(done: int, _total: int) -> None:
        if done == 2:
            raise KeyboardInterrupt

    plan = plan_dlq_replay(read_dlq(kafka_bootstrap, dlq.topic))
    with pytest.raises(KeyboardInterrupt):
        execute_dlq_replay(kafka_bootstrap, plan, on_progress=stop_at_second)
    arrived = replayed_refs(kafka_bootstrap, dlq.source, 3)
    assert sum(arrived.values()) >= 2
    marks = Counter(mark.of for mark in read_dlq(kafka_bootstrap, dlq.topic).marks)
    assert marks == Counter({dlq.refs["replayed"]: 1, **arrived})


def test_a_refused_send_exits_1_in_one_line_and_marks_the_others(
    kafka_bootstrap: str, dlq: Dlq, make_topic: TopicFactory
) -> None:
    small = make_topic("small", config={"max.message.bytes": "1000"})
    assert len(dlq.originals["replayed"].value() or b"") > 1000
    # one record a batch: the broker refuses the big one alone
    failed = clean(
        streams(
            "dlq",
            "replay",
            dlq.topic,
            "--to",
            small,
            "--again",
            "--execute",
            "-X",
            "linger.ms=0",
            "-X",
            "batch.num.messages=1",
            bootstrap=kafka_bootstrap,
        ),
        1,
    )
    error = failed.stderr.splitlines()[-1]
    assert error.startswith(
        "error: replay: 4 of 5 record(s) sent and marked as replayed; 1 record(s) not sent "
        "(first error: "
    )
    assert error.endswith("a rerun sends them")
    marks = Counter(mark.of for mark in read_dlq(kafka_bootstrap, dlq.topic).marks)
    assert marks == Counter({dlq.refs["replayed"]: 1, **dict.fromkeys(dlq.sendable(), 1)})
    assert replayed_refs(kafka_bootstrap, small, 1) == Counter(dlq.sendable())


# -- every command that changes a cluster, on this DLQ ------------------------------------


def test_every_command_that_writes_to_a_cluster_runs_cleanly_on_every_kind_of_letter(
    kafka_bootstrap: str, dlq: Dlq, make_topic: TopicFactory
) -> None:
    copy = make_topic("dlq-copy", partitions=3)
    group = f"test-dlq-group-{dlq.topic}"
    b = kafka_bootstrap
    clean(streams("dlq", "replay", dlq.topic, "--execute", bootstrap=b))
    clean(
        streams("replay", dlq.topic, "--from", "earliest", "--into", copy, "--execute", bootstrap=b)
    )
    assert len(read_all(b, copy, 3)) == len(read_all(b, dlq.topic, 3))  # letters and marks
    clean(
        streams(
            "offsets",
            "reset",
            "earliest",
            "--group",
            group,
            "--topic",
            dlq.topic,
            "--new-group",
            "--execute",
            bootstrap=b,
        )
    )
    clean(streams("groups", "delete", group, "--execute", bootstrap=b))
    clean(streams("produce", dlq.topic, "--raw", stdin="written by hand\n", bootstrap=b))
    for command in ("list", "show", "replay"):  # a record nobody dead-lettered among them
        clean(streams("dlq", command, dlq.topic, bootstrap=b))
    clean(streams("consume", dlq.topic, "--format", "table", bootstrap=b))
    clean(streams("topics", "delete", copy, "--execute", bootstrap=b))
