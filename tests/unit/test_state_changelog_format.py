"""The changelog record format: what a flush writes is what a restore reads back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams.state import NEVER, ChangelogRecord, CorruptChangelogError, StateError
from streams.state.changelog import (
    EXPIRES_AT,
    SOURCE_OFFSET,
    SOURCE_PARTITION,
    SOURCE_TOPIC,
    changelog_topic,
    decode_record,
)

records = st.builds(
    ChangelogRecord,
    key=st.binary(max_size=64),
    value=st.one_of(st.none(), st.binary(max_size=256)),
    expires_at_ms=st.one_of(st.just(NEVER), st.integers(1, 2**62)),
    source_topic=st.one_of(st.none(), st.from_regex(r"[a-zA-Z0-9._-]{1,40}", fullmatch=True)),
    source_partition=st.just(3),
    source_offset=st.one_of(st.none(), st.integers(0, 2**62)),
)


@given(records)
def test_a_record_round_trips_through_key_value_and_headers(record: ChangelogRecord) -> None:
    decoded = decode_record(
        record.key, record.value, record.headers(), topic="app-s-changelog", partition=3, offset=7
    )
    assert decoded == record
    assert decoded.entry == (None if record.value is None else (record.value, record.expires_at_ms))


def test_headers_name_the_source_and_the_expiry() -> None:
    record = ChangelogRecord(b"k", b"v", 1_700_000_000_000, "orders", 2, 41)
    assert dict(record.headers()) == {
        SOURCE_TOPIC: b"orders",
        SOURCE_PARTITION: b"2",
        SOURCE_OFFSET: b"41",
        EXPIRES_AT: b"1700000000000",
    }
    assert EXPIRES_AT not in dict(ChangelogRecord(b"k", b"v").headers())


def test_records_from_other_tools_without_headers_are_plain_entries() -> None:
    decoded = decode_record(b"k", b"v", None, topic="t", partition=0, offset=0)
    assert decoded == ChangelogRecord(b"k", b"v")


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
