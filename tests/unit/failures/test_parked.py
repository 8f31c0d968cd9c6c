"""Waiting-room entries as bytes, and a waiting room kept in a state-store transaction."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams.coordinates import Coordinates
from streams.failures.parked import (
    CorruptWaitingEntryError,
    ParkedRecord,
    TransactionWaitingStore,
    decode_entry,
    encode_entry,
)
from streams.failures.waiting import WaitingEntry, WaitingRoom
from streams.state import MemoryBackend
from streams.state.transaction import PartitionTransaction

_records = st.builds(
    ParkedRecord,
    key=st.none() | st.binary(max_size=20),
    value=st.none() | st.binary(max_size=50),
    headers=st.lists(
        st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=10)), max_size=4
    ).map(tuple),
    coordinates=st.builds(
        Coordinates, st.text(max_size=20), st.integers(0, 2**31 - 1), st.integers(0, 2**63 - 1)
    ),
    timestamp=st.none() | st.integers(0, 2**62),
)


@given(head=_records, parked=st.lists(_records, max_size=5).map(tuple))
def test_an_entry_reads_back_as_written(
    head: ParkedRecord, parked: tuple[ParkedRecord, ...]
) -> None:
    entry = WaitingEntry(head, parked)
    assert decode_entry(encode_entry(entry)) == entry


@pytest.mark.parametrize("data", [b"", b"\x02abc", b"\x01", b"\x01\x00\xff\xff\xff"])
def test_foreign_bytes_are_a_clear_error(data: bytes) -> None:
    with pytest.raises(CorruptWaitingEntryError):
        decode_entry(data)


def rec(key: bytes, offset: int) -> ParkedRecord:
    return ParkedRecord(
        key, b"v%d" % offset, (("ce_id", b"%d" % offset),), Coordinates("t", 0, offset)
    )


def test_a_room_in_a_store_transaction_survives_a_restart(tmp_path: Path) -> None:
    storage = MemoryBackend().open(tmp_path)
    tx = PartitionTransaction(storage)
    room: WaitingRoom[bytes, ParkedRecord] = WaitingRoom(TransactionWaitingStore(lambda: tx))
    room.failed(b"k", rec(b"k", 1))
    assert not room.admit(b"k", rec(b"k", 2))
    assert not room.admit(b"k", rec(b"k", 3))
    assert room.admit(b"other", rec(b"other", 4))
    assert set(tx.updates) == {b"wait:k"}  # one key written, prefixed

    storage.write(tx.updates)  # what the store's flush + apply do, once the changelog acks
    after_restart = PartitionTransaction(storage)
    room = WaitingRoom(TransactionWaitingStore(lambda: after_restart))
    assert room.is_blocked(b"k")
    assert room.head(b"k") == rec(b"k", 1)
    assert room.parked(b"k") == (rec(b"k", 2), rec(b"k", 3))
    assert room.settled(b"k") == rec(b"k", 2)
    assert room.settled(b"k") == rec(b"k", 3)
    assert room.settled(b"k") is None
    assert not room.is_blocked(b"k")
    assert after_restart.updates == {b"wait:k": None}  # freed: a tombstone in the changelog
    with pytest.raises(TypeError, match="does not list"):
        len(room)
