"""On the broker: a step that blocks stalls its partition (one WARNING, the stalled-partition
metrics, ``/readyz`` 503) until it returns; log lines a step writes name the record in
hand, and only then."""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from confluent_kafka.admin import AdminClient
from factories import order
from runtime_thread import RuntimeThread

from streams.cluster import Topics
from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.logs import configure_logging, get_logger
from streams.runtime import Runtime, RuntimeConfig
from streams.runtime.topics import prepare_topics
from streams.schemas import default_catalog
from streams.testing import TopicFactory, TopicReader, produce_envelopes, wait_until
from streams.testing.metrics import get
from streams.topology import Topology, TopologyBuilder, owned

CODEC = AvroCodec(default_catalog())
T, V = "order.placed", 2


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    out = io.StringIO()
    configure_logging("INFO", json=True, stream=out)
    yield out
    structlog.reset_defaults()
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_streams_handler", False):
            root.removeHandler(handler)


def lines(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def events(out: io.StringIO, event: str) -> list[dict[str, Any]]:
    return [line for line in lines(out) if line["event"] == event]


def metric(text: str, name: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(name)]


def topology(app_id: str, source: str, step: Any) -> Topology:
    b = TopologyBuilder(app_id)
    b.source(source, type=T, version=V).map(step).to(owned("out"), type=T, version=V)
    return b.build(default_catalog())


def test_a_blocked_step_stalls_its_partition_until_it_returns(
    kafka_bootstrap: str,
    kafka_admin: AdminClient,
    make_topic: TopicFactory,
    app_id: str,
    log_lines: io.StringIO,
) -> None:
    source = make_topic("stall-in", partitions=1)
    release = threading.Event()

    def step(env: Envelope) -> Envelope:
        if env.data["order_id"] == "o-2":
            release.wait(120)  # a dead service, until the test lets it answer
        return env

    top = topology(app_id, source, step)
    prepare_topics(Topics(kafka_admin), top)
    produce_envelopes(kafka_bootstrap, source, [order(n, "k") for n in range(5)], CODEC)
    pytest.importorskip("prometheus_client")  # the metrics extra
    config = RuntimeConfig(kafka_bootstrap, stall_after_s=1.0, stall_warning_s=0, metrics_port=0)
    runtime = Runtime(top, config)
    run = RuntimeThread(runtime)
    try:
        wait_until(lambda: runtime.metrics_port, 30, what="the metrics port")
        port = runtime.metrics_port
        assert port is not None
        wait_until(runtime.stall.stalled_partitions, 60, what="a stalled partition")
        (stalled,) = runtime.stall.stalled_partitions()
        assert (stalled.topic, stalled.partition, stalled.offset) == (source, 0, 2)
        # o-2 in hand, o-3 and o-4 behind it (their end known once the loop polled since
        # the fetch; a step that blocks on the first batch shows the record in hand)
        assert 1 <= stalled.lag <= 3
        assert runtime.stall.unready() == f"stalled partition(s): {source}[0]"
        (warning,) = events(log_lines, "partition stalled")
        assert warning["level"] == "warning"
        assert (warning["topic"], warning["partition"], warning["offset"]) == (source, 0, 2)
        assert warning["in_hand"] == f"{source}[0]@2" and warning["in_hand_s"] >= 1.0
        status, reasons = get(port, "/readyz")
        assert status == 503 and f"stalled partition(s): {source}[0]" in reasons
        _, text = get(port, "/metrics")
        assert metric(text, "streams_stalled_partitions{") == [
            f'streams_stalled_partitions{{app_id="{app_id}"}} 1.0'
        ]
        (seconds,) = metric(text, "streams_partition_stalled_seconds{")
        assert f'topic="{source}"' in seconds and 'partition="0"' in seconds

        release.set()  # the step returns: the partition moves, the instance is ready again
        wait_until(lambda: not runtime.stall.stalled_partitions(), 30, what="no stall")
        assert runtime.stall.unready() is None
        wait_until(lambda: events(log_lines, "partition moving again"), 30)
        wait_until(lambda: get(port, "/readyz")[0] == 200, 30, what="ready again")
        _, text = get(port, "/metrics")
        assert metric(text, "streams_stalled_partitions{")[0].endswith(" 0.0")
        assert metric(text, "streams_partition_stalled_seconds{") == []
        with TopicReader(kafka_bootstrap, top.topics_written[0]) as reader:
            assert len(reader.wait_for(lambda rs: len(rs) >= 5, 60)) == 5
    finally:
        release.set()
        assert run.stop(60) is None
    assert len(events(log_lines, "partition stalled")) == 1


def test_log_lines_of_a_step_name_the_record_in_hand(
    kafka_bootstrap: str,
    kafka_admin: AdminClient,
    make_topic: TopicFactory,
    app_id: str,
    log_lines: io.StringIO,
) -> None:
    source = make_topic("logctx-in", partitions=2)

    def step(env: Envelope) -> Envelope:
        get_logger("user.step").info("pricing", order=env.data["order_id"])
        return env

    top = topology(app_id, source, step)
    prepare_topics(Topics(kafka_admin), top)
    first = order(1, "a")
    sent = [first, first.follow(T, order(2, "b").data, version=V, key="b"), order(3, "c")]
    produce_envelopes(kafka_bootstrap, source, sent, CODEC)
    run = RuntimeThread(Runtime(top, RuntimeConfig(kafka_bootstrap)))
    try:
        wait_until(lambda: len(events(log_lines, "pricing")) == 3, 60, what="three lines")
    finally:
        assert run.stop(60) is None
    by_order = {line["order"]: line for line in events(log_lines, "pricing")}
    for n, env in enumerate(sent, start=1):
        line = by_order[f"o-{n}"]
        assert (line["event_id"], line["type"], line["version"]) == (env.id, T, V)
        assert (line["correlation_id"], line["causation_id"]) == (
            env.correlation_id,
            env.causation_id,
        )
        assert line["topic"] == source and line["partition"] in {0, 1}
        assert line["offset"] >= 0
    assert by_order["o-2"]["causation_id"] == first.id
    # The runtime's own lines outside a record (started, assigned, stopped) name none.
    for line in lines(log_lines):
        if line["event"] != "pricing":
            assert "event_id" not in line and "offset" not in line, line
