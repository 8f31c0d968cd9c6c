"""``streams produce`` and ``streams consume`` on the broker, and through a running topology."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli_runner import streams
from confluent_kafka import Producer

from streams.testing import TopicFactory
from streams.testing.topics import unique_topic_name
from streams.testing.topology_process import TopologyProcess

ROOT = Path(__file__).resolve().parents[2]


def order(order_id: str, customer: str, *, total: Any = None) -> str:
    items = [{"sku": "sku-1", "quantity": 2, "unit_price_cents": 1500}]
    return json.dumps(
        {
            "order_id": order_id,
            "customer_id": customer,
            "items": items,
            "total_cents": 3000 if total is None else total,
        }
    )


def consumed(bootstrap: str, topic: str, *args: str) -> list[dict[str, Any]]:
    result = streams("consume", topic, *args, bootstrap=bootstrap)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_produce_run_consume_round_trip(
    kafka_bootstrap: str,
    make_topic: TopicFactory,
    run_topology: Callable[..., TopologyProcess],
) -> None:
    source = make_topic("cli-orders", partitions=2)
    correlation = f"cli-{uuid.uuid4().hex[:8]}"
    lines = [
        order("o-1", "c-1"),
        order("o-2", "c-2", total=1),  # does not add up: rejected
        order("o-3", "c-3"),
    ]
    wrote = streams(
        "produce",
        source,
        "--type",
        "order.placed@2",
        "--key",
        "customer_id",
        "--correlation-id",
        correlation,
        stdin="\n".join(lines),
        bootstrap=kafka_bootstrap,
    )
    assert wrote.returncode == 0, wrote.stderr
    assert f"wrote 3 records to {source}" in wrote.stdout

    app_id = unique_topic_name("cli-app")
    run_topology(ROOT / "topology" / "orders.py", app_id=app_id, input=source)
    # --follow with --max: returns as soon as the topology has written both acceptances
    accepted = consumed(kafka_bootstrap, f"{app_id}-accepted", "--follow", "--max", "2")

    assert sorted(r["data"]["order_id"] for r in accepted) == ["o-1", "o-3"]
    for record in accepted:
        assert record["type"] == "order.accepted" and record["version"] == 1
        assert record["topic"] == f"{app_id}-accepted"
        assert record["correlation_id"] == correlation  # the conversation the CLI started
        assert record["causation_id"] is not None
        assert record["key"] in {"c-1", "c-3"}
        assert "error" not in record
    placed = {r["id"]: r for r in consumed(kafka_bootstrap, source, "--type", "order.placed")}
    assert {r["causation_id"] for r in accepted} <= placed.keys()


def test_consume_shows_a_garbage_record_raw_and_goes_on(
    kafka_bootstrap: str, make_topic: TopicFactory
) -> None:
    topic = make_topic("cli-garbage")
    first = streams(
        "produce",
        topic,
        "--type",
        "order.placed@2",
        "--key",
        "customer_id",
        stdin=order("o-1", "c-1"),
        bootstrap=kafka_bootstrap,
    )
    assert first.returncode == 0, first.stderr
    raw = Producer({"bootstrap.servers": kafka_bootstrap})
    raw.produce(topic, b"\xff\x00 not an envelope", b"junk-key")
    raw.produce(topic, b"plain text", b"\xfe\xff")
    assert raw.flush(30) == 0
    last = streams(
        "produce",
        topic,
        "--type",
        "order.placed@2",
        stdin=order("o-2", "c-2"),
        bootstrap=kafka_bootstrap,
    )
    assert last.returncode == 0, last.stderr

    records = consumed(kafka_bootstrap, topic, "--headers")
    assert [r["offset"] for r in records] == [0, 1, 2, 3]
    good, garbage, text, after = records
    assert good["data"]["order_id"] == "o-1" and good["headers"]["ce_type"] == "order.placed"
    assert garbage["key"] == "junk-key"
    assert garbage["value_base64"] == "/wAgbm90IGFuIGVudmVsb3Bl"
    assert "not a Streams envelope" in garbage["error"]
    assert text["key_base64"] == "/v8=" and text["value"] == "plain text" and text["error"]
    assert after["data"]["order_id"] == "o-2" and "error" not in after

    # the filters and bounds pick records without decoding them
    assert [r["offset"] for r in consumed(kafka_bootstrap, topic, "--key", "c-1")] == [0]
    bounded = consumed(kafka_bootstrap, topic, "--from", "1", "--to", "3")
    assert [r["offset"] for r in bounded] == [1, 2]
    assert len(consumed(kafka_bootstrap, topic, "--max", "3")) == 3
    shifted = streams("consume", topic, "--from=-2", bootstrap=kafka_bootstrap)
    assert shifted.returncode == 1 and "no committed offset" in shifted.stderr
    table = streams("consume", topic, "--format", "table", bootstrap=kafka_bootstrap)
    assert table.returncode == 0, table.stderr
    rows = [line for line in table.stdout.splitlines() if line.startswith("│ 0 │")]
    assert len(rows) == 4  # one row per record
    assert "(not an envelope)" in rows[1] and "order.placed@2" in rows[3]


def test_an_invalid_line_stops_produce_with_its_line_and_field(
    kafka_bootstrap: str, make_topic: TopicFactory
) -> None:
    topic = make_topic("cli-invalid")
    lines = [order("o-1", "c-1"), order("o-2", "c-2"), order("o-3", "c-3", total="12")]
    result = streams(
        "produce",
        topic,
        "--type",
        "order.placed@2",
        stdin="\n".join(lines),
        bootstrap=kafka_bootstrap,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: line 3: field 'total_cents': expected long, got str '12' "
        f"(2 records were already written to {topic})"
    ]
    assert [r["data"]["order_id"] for r in consumed(kafka_bootstrap, topic)] == ["o-1", "o-2"]


def test_dry_run_prints_the_envelopes_and_writes_nothing(
    kafka_bootstrap: str, make_topic: TopicFactory
) -> None:
    topic = make_topic("cli-dry")
    result = streams(
        "produce",
        topic,
        "--type",
        "order.placed@2",
        "--key",
        "{customer_id}/{order_id}",
        "--dry-run",
        stdin=f"{order('o-1', 'c-1')}\n\n{order('o-2', 'c-2')}\n",
        bootstrap=kafka_bootstrap,
    )
    assert result.returncode == 0, result.stderr
    envelopes = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["key"] for e in envelopes] == ["c-1/o-1", "c-2/o-2"]
    assert all(e["type"] == "order.placed" and e["version"] == 2 for e in envelopes)
    assert envelopes[0]["data"]["currency"] == "EUR"  # as written: the schema's default
    assert consumed(kafka_bootstrap, topic) == []


def test_count_with_rate_cycles_over_the_input(
    kafka_bootstrap: str, make_topic: TopicFactory
) -> None:
    topic = make_topic("cli-load", partitions=2)
    result = streams(
        "produce",
        topic,
        "--type",
        "order.placed@2",
        "--key",
        "customer_id",
        "--count",
        "7",
        "--rate",
        "50/s",
        "--json",
        stdin=f"{order('o-1', 'c-1')}\n{order('o-2', 'c-2')}\n",
        bootstrap=kafka_bootstrap,
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["count"] == 7
    spans = [p["last_offset"] - p["first_offset"] + 1 for p in summary["partitions"]]
    assert sum(spans) == 7
    records = consumed(kafka_bootstrap, topic)
    assert len(records) == 7 and len({r["id"] for r in records}) == 7  # each a new envelope
    assert sorted(r["data"]["order_id"] for r in records) == ["o-1"] * 4 + ["o-2"] * 3


def test_follow_waits_for_a_topic_that_does_not_exist_yet(kafka_bootstrap: str) -> None:
    # A consumer started before the topology that creates its topic (the quickstart's order)
    # waits for the topic; without --follow a missing topic is an error at once.
    topic = unique_topic_name("cli-later")
    missing = streams("consume", topic, bootstrap=kafka_bootstrap)
    assert missing.returncode == 1
    assert "does not exist" in missing.stderr

    # A process of its own: it runs while the commands below run (in this process, which
    # gives each its own stdin, stdout and environment).
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap}
    follower = subprocess.Popen(
        [sys.executable, "-m", "streams", "consume", topic, "--follow", "--max", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert follower.stderr is not None
        # the one line saying what it waits for comes before the topic exists
        assert "waiting for topic" in follower.stderr.readline()
        assert streams("topics", "create", topic, bootstrap=kafka_bootstrap).returncode == 0
        wrote = streams(
            "produce",
            topic,
            "--type",
            "order.placed@2",
            stdin=order("o-9", "c-9"),
            bootstrap=kafka_bootstrap,
        )
        assert wrote.returncode == 0, wrote.stderr
        out, _ = follower.communicate(timeout=60)
    finally:
        follower.kill()
        streams("topics", "delete", topic, "--yes", "--if-exists", bootstrap=kafka_bootstrap)
    assert follower.returncode == 0
    assert [json.loads(line)["data"]["order_id"] for line in out.splitlines()] == ["o-9"]
