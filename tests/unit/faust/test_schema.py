"""EnvelopeSchema, generated records, follow and the dead-letter route, without a broker."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import faust
import pytest
from faust.types.tuples import Message

from streams.codec import AvroCodec
from streams.codec.errors import (
    HeaderMismatchError,
    MalformedRecordError,
    MissingHeaderError,
    UnknownVersionError,
)
from streams.envelope import Envelope
from streams.errors import StreamsError
from streams.failures.headers import EXCEPTION, OFFSET, PARTITION, STAGE, TOPIC
from streams.faust import (
    BadEnvelopeError,
    ConfluentTransportError,
    EnvelopeSchema,
    EnvelopeTopicError,
    WrongTypeError,
    dead_letter_route,
    envelope_topic,
    follow,
    record_class,
)
from streams.schemas import default_catalog

CATALOG = default_catalog()
CODEC = AvroCodec(CATALOG)
V1 = {"order_id": "o-1", "customer_id": "c-1", "items": [], "total_cents": 0}


def _app(broker: str = "kafka://127.0.0.1:9092") -> faust.App:
    return faust.App("unit", broker=broker, store="memory://", web_enabled=False)


def _message(value: bytes, headers: Any, offset: int = 7) -> Message:
    return Message(
        topic="in", partition=1, offset=offset, timestamp=1_700_000_000.5, timestamp_type=0,
        headers=headers, key=b"c-1", value=value, checksum=None,
    )  # fmt: skip


def _decode(topic: Any, message: Message) -> Any:
    return asyncio.run(topic.decode(message, propagate=True))


def test_a_v1_record_is_read_as_the_declared_v2_with_its_default() -> None:
    app = _app()
    topic = envelope_topic(app, "in", EnvelopeSchema(CATALOG, "order.placed", version=2))
    env = Envelope.new("order.placed", V1, version=1, key="c-1")
    event = _decode(topic, _message(*CODEC.encode(env)))
    assert event.value.version == 2
    assert event.value.data == {**V1, "currency": "EUR"}
    assert event.value.id == env.id


def test_sending_writes_our_wire_format_with_its_headers_and_the_envelope_key() -> None:
    app = _app()
    topic = envelope_topic(app, "out", EnvelopeSchema(CATALOG, "order.placed", version=2))
    env = Envelope.new("order.placed", {**V1, "currency": "USD"}, version=2, key="c-9")

    async def prepare() -> Any:  # a FutureMessage needs a running loop
        return topic.as_future_message(value=env, headers=[("ce_id", b"stale"), ("x", b"1")])

    message = asyncio.run(prepare()).message
    assert message.key == b"c-9"
    headers = dict(message.headers)
    assert headers["ce_id"] == env.id.encode() and headers["x"] == b"1"
    assert headers["ce_type"] == b"order.placed" and headers["ce_dataversion"] == b"2"
    assert [name for name, _ in message.headers].count("ce_id") == 1
    # A Streams reader declaring v1 reads it.
    assert CODEC.decode(message.value, message.headers, version=1).data == V1


def test_an_envelope_topic_sends_envelopes_of_its_type_only() -> None:
    topic = envelope_topic(_app(), "out", EnvelopeSchema(CATALOG, "order.placed", version=2))
    with pytest.raises(EnvelopeTopicError, match="not dicts"):
        topic.as_future_message(value={"order_id": "x"})
    other = Envelope.new("order.rejected", {"order_id": "o", "reason": "r", "detail": "d"})
    with pytest.raises(EnvelopeTopicError, match=r"cannot send a order\.rejected envelope"):
        topic.as_future_message(value=other)


@pytest.mark.parametrize(
    ("value", "headers", "error"),
    [
        (b"\x00garbage", None, MalformedRecordError),
        (*CODEC.encode(Envelope.new("order.placed", V1, version=1)), WrongTypeError),
    ],
)
def test_bad_input_is_refused_with_the_codec_error(value: bytes, headers: Any, error: type) -> None:
    topic = envelope_topic(_app(), "in", EnvelopeSchema(CATALOG, "order.accepted", on_error="skip"))
    with pytest.raises(BadEnvelopeError) as caught:
        _decode(topic, _message(value, headers))
    assert isinstance(caught.value.error, error)


def test_bad_input_in_an_envelope_topic_does_not_reach_the_agent() -> None:
    topic = envelope_topic(_app(), "in", EnvelopeSchema(CATALOG, "order.accepted", on_error="skip"))
    # Faust's conductor calls this after acking the record: no error is thrown to the agent.
    asyncio.run(topic.on_value_decode_error(BadEnvelopeError(MalformedRecordError("x")), None))
    assert topic.queue._errors == type(topic.queue._errors)()


def test_a_plain_faust_topic_and_the_confluent_transport_are_refused_in_one_line() -> None:
    schema = EnvelopeSchema(CATALOG, "order.accepted")
    with pytest.raises(EnvelopeTopicError, match=r"plain faust\.Topic.*envelope_topic"):
        _app().topic("in", schema=schema)
    with pytest.raises(ConfluentTransportError, match=r"drops record headers.*use kafka://"):
        envelope_topic(_app("confluent://127.0.0.1:9092"), "in", schema)


def test_unknown_schemas_and_on_error_values_are_refused() -> None:
    with pytest.raises(StreamsError, match=r"order\.nope"):
        EnvelopeSchema(CATALOG, "order.nope")
    with pytest.raises(EnvelopeTopicError, match="on_error must be one of dlq, skip"):
        EnvelopeSchema(CATALOG, "order.accepted", on_error="drop")  # type: ignore[arg-type]


def test_the_dead_letter_route_is_a_streams_dlq_record() -> None:
    value, headers = b"\x00garbage", [("origin", b"kept")]
    route = dead_letter_route("fx", _message(value, headers), UnknownVersionError("v99"))
    assert route.topic == "fx-in-dlq" and route.partition == 1
    assert (route.key, route.value, route.timestamp) == (b"c-1", value, 1_700_000_000_500)
    found = dict(route.headers)
    assert route.headers[0] == ("origin", b"kept")
    assert found[STAGE] == b"decode" and found[TOPIC] == b"in"
    assert (found[PARTITION], found[OFFSET]) == (b"1", b"7")
    assert found[EXCEPTION] == b"streams.codec.errors.UnknownVersionError"
    assert route.dead_letter


def test_record_classes_are_typed_from_the_schema() -> None:
    placed = record_class(CATALOG, "order.placed", 2)
    assert record_class(CATALOG, "order.placed", 2) is placed
    fields = placed._options.fields
    assert fields["order_id"] is str and fields["total_cents"] is int
    assert fields["currency"] is str and placed._options.defaults["currency"] == "EUR"
    accepted = record_class(CATALOG, "order.accepted", 1)
    assert accepted._options.fields["accepted_at"] is dt.datetime


def test_a_decoded_record_carries_its_envelope_and_follow_keeps_the_conversation() -> None:
    topic = envelope_topic(_app(), "in", EnvelopeSchema(CATALOG, "order.accepted", as_record=True))
    env = Envelope.new(
        "order.accepted", {"order_id": "o-1", "accepted_at": dt.datetime.now(dt.UTC)}, key="c-1"
    )
    order = _decode(topic, _message(*CODEC.encode(env))).value
    assert order.order_id == "o-1" and order.envelope.id == env.id
    shipment = record_class(CATALOG, "shipment.requested", 1)
    reply = follow(order, shipment(order_id="o-1", carrier="ups", requested_at=order.accepted_at))
    assert (reply.type, reply.version, reply.key) == ("shipment.requested", 1, "c-1")
    assert reply.correlation_id == env.correlation_id and reply.causation_id == env.id
    with pytest.raises(EnvelopeTopicError, match="carries no envelope"):
        follow(shipment(order_id="o", carrier="c", requested_at=order.accepted_at), reply)


def test_a_decoded_record_is_the_record_faust_makes_from_the_same_fields() -> None:
    # from_envelope writes the fields directly when Faust would store them unchanged.
    placed = record_class(CATALOG, "order.placed", 2)
    data = {
        **V1,
        "items": [{"sku": "s-1", "quantity": 2, "unit_price_cents": 150}],
        "currency": "USD",
    }
    env = Envelope.new("order.placed", data, version=2, key="c-1")
    decoded = placed.from_envelope(env)
    made = placed(**data)
    assert decoded == made and decoded.asdict() == made.asdict() == data
    assert decoded.envelope is env and made.envelope is None
    assert decoded.to_representation() == made.to_representation()
    # Other fields than the class's: Faust's own default for a missing one, and its error.
    assert placed.from_envelope(env.with_data(V1)).currency == "EUR"
    with pytest.raises(TypeError, match="unexpected"):
        placed.from_envelope(env.with_data({**data, "note": "x"}))


def test_headers_are_checked_whatever_form_they_come_in() -> None:
    topic = envelope_topic(_app(), "in", EnvelopeSchema(CATALOG, "order.placed", on_error="skip"))
    env = Envelope.new("order.placed", V1, key="c-1")
    value, headers = CODEC.encode(env)
    by_hand = {name.encode(): content.decode() for name, content in headers}  # bytes names
    assert _decode(topic, _message(value, by_hand)).value.id == env.id
    for wrong in ({**by_hand, b"ce_id": "other"}, [(b"ce_type", b"order.placed")]):
        with pytest.raises(BadEnvelopeError) as caught:
            _decode(topic, _message(value, wrong))
        assert isinstance(caught.value.error, (HeaderMismatchError, MissingHeaderError))
