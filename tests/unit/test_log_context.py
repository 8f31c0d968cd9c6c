"""Log lines about a record name it: ids, type, version and coordinates, and only then.

Run on the TestDriver (the runtime's own chain); the broker test is
``tests/integration/test_log_context_broker.py``. librdkafka's lines, relayed by
``KafkaLog``, are rendered by the same structlog chain.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from functools import partial
from typing import Any

import factories
import pytest
import structlog
from confluent_kafka import Producer

from streams.config import client_config
from streams.envelope import Envelope
from streams.logs import KafkaLog, configure_logging, get_logger
from streams.schemas import default_catalog
from streams.testing import TestDriver, wait_until
from streams.topology import ErrorAction, Topology, TopologyBuilder, owned

T, V = "order.placed", 2
RECORD_FIELDS = (
    "event_id",
    "type",
    "version",
    "correlation_id",
    "causation_id",
    "topic",
    "partition",
    "offset",
)


order = partial(factories.order, customer="k1")


def logging_step(env: Envelope) -> Envelope:
    get_logger("user.step").info("pricing", order=env.data["order_id"])
    logging.getLogger("user.stdlib").warning("priced %s", env.data["order_id"])
    get_logger("user.step").info("named", topic="mine")  # a line's own field wins
    if env.data["total_cents"] < 0:
        raise ValueError("negative total")
    return env


def build(on_error: Any = None) -> Topology:
    b = TopologyBuilder("app", on_error=on_error)
    b.source("in", type=T, version=V).map(logging_step).to(owned("out"), type=T, version=V)
    return b.build(default_catalog())


@pytest.fixture
def out() -> io.StringIO:
    stream = io.StringIO()
    configure_logging("DEBUG", json=True, stream=stream)
    return stream


def read(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def by_event(lines: list[dict[str, Any]], event: str) -> list[dict[str, Any]]:
    return [line for line in lines if line["event"] == event]


def test_a_step_logging_inside_map_names_the_record_and_a_line_after_it_does_not(
    out: io.StringIO,
) -> None:
    first = order(1)
    second = first.follow(T, order(2).data, version=V)
    with TestDriver(build()) as driver:
        driver.pipe("in", [first, second])
        get_logger("user.after").info("done")
    lines = read(out)
    pricing = by_event(lines, "pricing")
    assert [line["order"] for line in pricing] == ["o-1", "o-2"]
    assert {k: pricing[1][k] for k in RECORD_FIELDS} == {
        "event_id": second.id,
        "type": T,
        "version": V,
        "correlation_id": first.correlation_id,
        "causation_id": first.id,
        "topic": "in",
        "partition": 0,
        "offset": 1,
    }
    stdlib = by_event(lines, "priced o-2")  # stdlib logging in a step: the same fields
    assert stdlib[0]["event_id"] == second.id and stdlib[0]["offset"] == 1
    assert by_event(lines, "named")[0]["topic"] == "mine"
    after = by_event(lines, "done")[0]
    assert not set(RECORD_FIELDS) & after.keys()


def test_the_lines_about_a_failed_record_name_it(out: io.StringIO) -> None:
    bad = order(-5)
    with TestDriver(build(on_error=lambda _failure: ErrorAction.DLQ)) as driver:
        driver.pipe("in", [bad])
        driver.pipe_raw("in", b"\x00 not an envelope")
        assert len(driver.dead_letters) == 2
    dead = by_event(read(out), "record dead-lettered")
    assert dead[0]["event_id"] == bad.id and dead[0]["correlation_id"] == bad.id
    assert dead[0]["type"] == T and dead[0]["version"] == V and dead[0]["offset"] == 0
    # Bytes that never decoded: where they were read, and no envelope field.
    assert dead[1]["offset"] == 1 and dead[1]["topic"] == "in"
    assert "correlation_id" not in dead[1] and "version" not in dead[1]


def test_librdkafka_lines_are_structured_lines_of_the_same_chain(out: io.StringIO) -> None:
    relay = KafkaLog(every_s=60)
    # Nothing listens on port 1: librdkafka logs the refused connection at once.
    producer = Producer(
        {**client_config("127.0.0.1:1", {}), "logger": relay, "client.id": "log-test"}
    )

    def kafka_lines() -> list[dict[str, Any]]:
        producer.poll(0.1)
        return [line for line in read(out) if line.get("logger") == "streams.kafka"]

    try:
        wait_until(kafka_lines, 20)
    finally:
        producer.flush(0)
    line = kafka_lines()[0]
    assert line["level"] == "debug" and "timestamp" in line
    assert line["client"].startswith("log-test#producer")
    assert line["facility"] and line["kafka_level"] in {"error", "warning", "info", "debug"}
    assert "Connection refused" in line["event"]
    assert line["client"] not in line["event"]  # the message alone, not "FAC [client] ..."


@pytest.fixture(autouse=True)
def _reset_logging() -> Iterator[None]:
    yield
    structlog.reset_defaults()
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_streams_handler", False):
            root.removeHandler(handler)
