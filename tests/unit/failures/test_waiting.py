"""Per-key order through retries: the waiting room releases each key's records in order."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.failures.waiting import WaitingEntry, WaitingRoom


def test_later_records_of_a_retrying_key_wait_other_keys_do_not() -> None:
    room: WaitingRoom[str, int] = WaitingRoom()
    assert room.admit("a", 1)
    room.failed("a", 1)  # offset 1 went to a retry tier
    assert not room.admit("a", 2)
    assert not room.admit("a", 3)
    assert room.admit("b", 4)
    assert room.parked("a") == (2, 3)
    assert (len(room), room.waiting()) == (1, 2)
    assert room.settled("a") == 2  # 1 succeeded on retry: 2 is released and heads "a"
    assert not room.admit("a", 5)  # still behind 2 while 2 is being processed
    room.failed("a", 2)  # 2 fails: it goes to retry, 3 and 5 stay behind it
    assert room.head("a") == 2
    assert room.settled("a") == 3
    assert room.settled("a") == 5
    assert room.settled("a") is None
    assert not room.is_blocked("a")
    assert room.admit("a", 6)


def test_records_without_a_key_are_never_parked() -> None:
    room: WaitingRoom[str, int] = WaitingRoom()
    room.failed(None, 1)
    assert room.admit(None, 2)
    assert room.settled(None) is None
    assert len(room) == 0


def test_settling_a_free_key_is_a_bug_in_the_caller() -> None:
    with pytest.raises(KeyError):
        WaitingRoom[str, int]().settled("a")


class RecordingStore(dict[str, WaitingEntry[int]]):
    """A dict that counts writes, as a changelog-backed store would emit them."""

    writes = 0

    def __setitem__(self, key: str, value: WaitingEntry[int]) -> None:
        self.writes += 1
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.writes += 1
        super().__delitem__(key)


def test_every_change_is_one_write_to_the_store() -> None:
    store = RecordingStore()
    room: WaitingRoom[str, int] = WaitingRoom(store)
    room.failed("a", 1)
    room.admit("a", 2)
    room.admit("b", 3)  # free key: nothing to store
    room.settled("a")
    room.settled("a")
    assert store.writes == 4
    assert store == {}


@dataclass(frozen=True)
class Rec:
    key: str
    offset: int


OUTCOMES = st.sampled_from(["ok", "ok", "retry", "dead"])
EVENTS = st.lists(
    st.one_of(
        st.tuples(st.just("new"), st.sampled_from("abc"), OUTCOMES),
        st.tuples(st.just("due"), st.sampled_from("abc"), OUTCOMES),
        st.tuples(st.just("restart"), st.just(""), st.just("")),
    ),
    max_size=60,
)


@settings(max_examples=300)
@given(events=EVENTS, data=st.data())
def test_any_interleaving_settles_each_keys_records_once_in_offset_order(
    events: list[tuple[str, str, str]], data: st.DataObject
) -> None:
    """A model runtime: new records arrive, retried heads come due, processing succeeds,
    fails again or dead-letters, and the process restarts from its store. Whatever
    happens, a record is processed only after every earlier record of its key settled,
    and every record settles exactly once, in offset order per key."""
    store: dict[str, WaitingEntry[Rec]] = {}
    room: WaitingRoom[str, Rec] = WaitingRoom(store)
    arrived: dict[str, list[int]] = defaultdict(list)
    settled: dict[str, list[int]] = defaultdict(list)

    def process(rec: Rec, outcome: str) -> None:
        # Everything earlier of this key has settled before the record is processed.
        assert settled[rec.key] == [o for o in arrived[rec.key] if o < rec.offset]
        while True:
            if outcome == "retry":
                room.failed(rec.key, rec)
                return
            settled[rec.key].append(rec.offset)
            released = room.settled(rec.key) if room.is_blocked(rec.key) else None
            if released is None:
                return
            rec, outcome = released, data.draw(OUTCOMES)
            assert settled[rec.key] == [o for o in arrived[rec.key] if o < rec.offset]

    for offset, (kind, key, outcome) in enumerate(events):
        if kind == "new":
            rec = Rec(key, offset)
            arrived[key].append(offset)
            if room.admit(key, rec):
                process(rec, outcome)
        elif kind == "due":
            head = room.head(key)
            if head is not None:
                process(head, outcome)
        else:  # a restart: the room is rebuilt from what its store holds
            store = dict(store)
            room = WaitingRoom(store)

    # Drain: every retried head eventually succeeds.
    while len(room):
        key = next(iter(room.keys()))
        head = room.head(key)
        assert head is not None
        process(head, "ok")
    assert dict(settled) == {key: offsets for key, offsets in arrived.items()}
