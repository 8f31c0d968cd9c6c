"""Payloads are decoded where a step first reads them, and nowhere else.

Through the TestDriver (the runtime's chain on in-memory clients): an envelope passed on
unchanged is written as the value it came in; a payload that cannot be decoded is a decode
failure (straight to the DLQ, never retried) wherever a step reads it.
"""

from __future__ import annotations

import dataclasses
from functools import partial

import factories

from streams.codec import AvroCodec
from streams.codec.envelope_wire import envelope_value, type_version_bytes
from streams.envelope import Envelope
from streams.schemas import default_catalog
from streams.testing import TestDriver
from streams.topology import TopologyBuilder, owned

CODEC = AvroCodec(default_catalog())


order = partial(factories.order, customer="c-1")


def test_an_envelope_passed_on_unchanged_is_written_as_it_came_in() -> None:
    b = TopologyBuilder("app")
    b.source("in", type="order.placed", version=2).filter(lambda e: e.key == "c-1").to(
        owned("out"), type="order.placed", version=2
    )
    value, headers = CODEC.encode(order(1))
    with TestDriver(b.build()) as driver:
        driver.pipe_raw("in", value, headers, key=b"c-1")
        (out,) = driver.records("app-out")
    assert out.value == value  # not decoded, not encoded again: the same bytes
    assert out.envelope == CODEC.decode(value, headers)


def test_a_payload_read_and_changed_is_encoded_again() -> None:
    b = TopologyBuilder("app")
    b.source("in", type="order.placed", version=2).map(
        lambda e: e.with_data({**e.data, "total_cents": 99})
    ).to(owned("out"), type="order.placed", version=2)
    with TestDriver(b.build()) as driver:
        driver.pipe("in", order(1))
        (out,) = driver.read("app-out")
    assert out.data["total_cents"] == 99


def test_a_payload_that_cannot_be_read_where_a_step_reads_it_is_a_decode_failure() -> None:
    tried: list[str] = []

    def price(env: Envelope) -> Envelope:
        tried.append("price")
        env.data["total_cents"]  # the first read of the payload
        return env

    b = TopologyBuilder("app", retry="1s")
    b.source("in", type="order.placed", version=2).map(price, name="price").to(
        owned("out"), type="order.placed", version=2
    )
    env = order(1)
    # a well-formed envelope record whose payload bytes are not an order.placed@2
    value = envelope_value(env, b"\x07 not the payload", type_version_bytes(env.type, 2))
    with TestDriver(b.build()) as driver:
        driver.pipe_raw("in", value, CODEC.headers(env), key=b"c-1")
        driver.advance_time(5_000)
        (dead,) = driver.dead_letters
        assert driver.retried == [] and driver.read("app-out") == []
    assert dead.info.stage.value == "decode" and dead.info.step == "decode"
    assert dead.info.attempts == 1 and tried == ["price"]
    assert dead.value == value


def test_a_lazily_read_envelope_equals_the_eagerly_read_one_field_by_field() -> None:
    sent = order(7)
    value, headers = CODEC.encode(sent)
    lazy = CODEC.decode(value, lazy=True)
    eager = CODEC.decode(value, headers)
    # time and data are made when first read; each equals the eager read and the original
    assert lazy.time == eager.time == sent.time and lazy.time.tzinfo is not None
    assert lazy == eager == sent
    assert CODEC.encode(lazy)[0] == value


def test_replacing_a_field_of_a_lazily_read_envelope_keeps_the_others() -> None:
    sent = order(8)
    lazy = CODEC.decode(CODEC.encode(sent)[0], lazy=True)
    moved = dataclasses.replace(lazy, key="c-2")
    assert (moved.key, moved.time, moved.data) == ("c-2", sent.time, sent.data)
    assert CODEC.decode(*CODEC.encode(moved)).time == sent.time
