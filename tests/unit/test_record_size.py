"""``record_size`` says what librdkafka says: a record is refused by ``produce`` exactly
when its size is over ``message.max.bytes``. Checked against librdkafka itself (its check
happens in ``produce``, before any broker is asked: none is needed here)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.record_size import record_size, varint_size

LIMIT = 4_000  # librdkafka's smallest message.max.bytes is 1,000


@pytest.fixture(scope="module")
def producer() -> Iterator[Producer]:
    # No broker: librdkafka's connection attempts would log, silenced (log_level 0).
    settings = {"bootstrap.servers": "127.0.0.1:1", "message.max.bytes": LIMIT, "log_level": 0}
    made = Producer(settings)
    yield made
    made.purge()


def refused(producer: Producer, key: bytes | None, value: bytes, headers: list) -> bool:  # type: ignore[type-arg]
    try:
        producer.produce("t", value, key, headers=headers)
    except KafkaException as exc:
        assert exc.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
        return True
    producer.purge()
    return False


names = st.text(  # C strings of UTF-8: no NUL, no lone surrogate (no str of a header has one)
    st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=40
)
header_values = st.one_of(st.none(), st.binary(max_size=300))


@settings(max_examples=200, deadline=None)
@given(
    key=st.one_of(st.none(), st.binary(max_size=200)),
    headers=st.lists(st.tuples(names, header_values), max_size=8),
    slack=st.integers(-3, 3),
)
def test_librdkafka_refuses_a_record_exactly_when_it_is_over_the_limit(
    producer: Producer,
    key: bytes | None,
    headers: list[tuple[str, bytes | None]],
    slack: int,
) -> None:
    # A value that brings the record to within a few bytes of the limit, either side.
    room = LIMIT - record_size(key, b"", headers) + slack
    value = b"v" * max(room, 0)
    assert refused(producer, key, value, headers) == (record_size(key, value, headers) > LIMIT)


def test_a_varint_is_as_long_as_its_zigzag_encoding() -> None:
    assert [varint_size(n) for n in (-1, 0, 63, 64, 8191, 8192)] == [1, 1, 1, 2, 2, 3]
