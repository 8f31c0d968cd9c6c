"""The changelog record format: what a flush writes is what a restore reads back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams.state import NEVER, ChangelogRecord, CorruptChangelogError, StateError
from streams.state.changelog import (
    EXPIRES_AT,
    PREFIX_SIZE,
    SOURCE_OFFSET,
    SOURCE_PARTITION,
    SOURCE_TOPIC,
    VALUE_TAG,
    changelog_topic,
    decode_record,
)

records = st.builds(
    ChangelogRecord,
    key=st.binary(max_size=64),
    value=st.one_of(st.none(), st.binary(max_size=256)),
    expires_at_ms=st.one_of(st.just(NEVER), st.integers(1, 2**62)),
    source_offset=st.one_of(st.none(), st.integers(0, 2**62)),
)


@given(records)
def test_a_record_round_trips_through_key_value_and_headers(record: ChangelogRecord) -> None:
    value, headers = record.encode()
    decoded = decode_record(
        record.key, value, headers, topic="app-s-changelog", partition=3, offset=7
    )
    # a tombstone keeps no expiry: it deletes its key
    expected = (
        record
        if record.value is not None
        else ChangelogRecord(record.key, None, NEVER, source_offset=record.source_offset)
    )
    assert decoded == expected
    assert decoded.entry == (None if record.value is None else (record.value, record.expires_at_ms))


def test_a_put_carries_its_tags_in_its_value_and_no_header() -> None:
    # Two headers took a changelog write from 0.66 to 0.98 µs: the tags go in the value.
    value, headers = ChangelogRecord(b"k", b"v", 1_700_000_000_000, source_offset=41).encode()
    assert headers == []
    assert (
        value == VALUE_TAG + (41).to_bytes(8, "big") + (1_700_000_000_000).to_bytes(8, "big") + b"v"
    )
    untagged, _ = ChangelogRecord(b"k", b"", source_offset=None).encode()
    assert untagged == VALUE_TAG + (-1).to_bytes(8, "big", signed=True) + bytes(8)


def test_a_tombstone_carries_its_source_offset_in_a_header() -> None:
    assert ChangelogRecord(b"k", None, source_offset=41).encode() == (
        None,
        [(SOURCE_OFFSET, b"41")],
    )
    assert ChangelogRecord(b"k", None).encode() == (None, [])


def test_records_of_earlier_versions_restore_from_their_headers() -> None:
    headers = [
        (SOURCE_TOPIC, b"orders"),
        (SOURCE_PARTITION, b"2"),
        (SOURCE_OFFSET, b"41"),
        (EXPIRES_AT, b"1700000000000"),
    ]
    decoded = decode_record(b"k", b"v", headers, topic="t", partition=2, offset=0)
    assert decoded == ChangelogRecord(b"k", b"v", 1_700_000_000_000, "orders", 2, 41)
    # a value of an earlier version that happens to start like a tag is still its value
    odd = VALUE_TAG + b"raw"
    decoded = decode_record(b"k", odd, [(SOURCE_OFFSET, b"9")], topic="t", partition=2, offset=0)
    assert decoded == ChangelogRecord(b"k", odd, source_offset=9)


def test_records_from_other_tools_without_headers_are_plain_entries() -> None:
    decoded = decode_record(b"k", b"v", None, topic="t", partition=0, offset=0)
    assert decoded == ChangelogRecord(b"k", b"v")


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (VALUE_TAG + bytes(5), f"shorter than its {PREFIX_SIZE}-byte prefix"),
        (VALUE_TAG + bytes(8) + (-5).to_bytes(8, "big", signed=True), "negative expiry"),
        (VALUE_TAG + (-2).to_bytes(8, "big", signed=True) + bytes(8), "negative expiry or offset"),
    ],
)
def test_a_put_with_a_broken_prefix_is_corrupt(value: bytes, reason: str) -> None:
    with pytest.raises(CorruptChangelogError, match=r"t\[0\]@12") as caught:
        decode_record(b"k", value, None, topic="t", partition=0, offset=12)
    assert reason in str(caught.value)


@pytest.mark.parametrize(
    ("key", "headers", "reason"),
    [
        (None, [], "no key"),
        (b"k", [(SOURCE_OFFSET, b"12x")], "streams.source.offset"),
        (b"k", [(EXPIRES_AT, b"-5")], "streams.expires.ms"),
        (b"k", [(EXPIRES_AT, None)], "streams.expires.ms"),
        (b"k", [(SOURCE_TOPIC, b"\xff\xfe")], "utf-8"),
        (b"k", [(SOURCE_PARTITION, b"1")], "input partition 1"),
    ],
)
def test_a_corrupt_record_is_reported_with_its_offset(
    key: bytes | None, headers: list[tuple[str, bytes | None]], reason: str
) -> None:
    with pytest.raises(CorruptChangelogError, match=r"app-s-changelog\[0\]@1234") as caught:
        decode_record(key, b"v", headers, topic="app-s-changelog", partition=0, offset=1234)
    assert caught.value.offset == 1234
    assert reason in str(caught.value)


def test_the_changelog_topic_name_is_derived_from_app_and_store() -> None:
    assert changelog_topic("billing", "dedup") == "billing-dedup-changelog"
    with pytest.raises(StateError, match="store name"):
        changelog_topic("billing", "de dup")
