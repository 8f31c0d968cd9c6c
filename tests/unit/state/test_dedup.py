"""Dedup over a store: an id is processed once within its window, duplicates are counted."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from structlog.testing import capture_logs

from streams.state import Dedup, Entry, MemoryBackend, PartitionTransaction


def make_dedup(ttl: float = 60.0) -> tuple[Dedup, PartitionTransaction]:
    tx = PartitionTransaction(MemoryBackend().open(Path("unused")))
    return Dedup(lambda: tx, ttl=ttl), tx


def test_an_id_is_first_once_then_a_duplicate_within_the_window() -> None:
    dedup, _ = make_dedup(ttl=60)
    assert dedup.first("evt-1", now=100.0)
    assert not dedup.first("evt-1", now=120.0)
    assert not dedup.first("evt-1", now=159.9)
    assert dedup.first("evt-2", now=120.0)
    assert (dedup.unique, dedup.duplicates) == (2, 2)


def test_after_the_window_the_id_is_new_again() -> None:
    dedup, _ = make_dedup(ttl=60)
    dedup.mark("evt", now=100.0)
    assert dedup.seen("evt", now=159.999)
    assert not dedup.seen("evt", now=160.0)
    assert dedup.first("evt", now=160.0)


def test_mark_with_its_own_ttl_and_bytes_ids() -> None:
    dedup, tx = make_dedup(ttl=60)
    dedup.mark(b"\x01\x02", now=0.0, ttl=5)
    assert dedup.seen(b"\x01\x02", now=4.0)
    assert not dedup.seen(b"\x01\x02", now=5.0)
    assert tx.updates[b"\x01\x02"] == Entry(b"", 5_000)


def test_a_duplicate_is_logged_at_debug_with_its_id(caplog: pytest.LogCaptureFixture) -> None:
    dedup, _ = make_dedup()
    dedup.first("evt-9", now=0.0)
    with caplog.at_level(logging.DEBUG, logger="streams.state.dedup"), capture_logs() as logs:
        dedup.first("evt-9", now=1.0)
    assert {"event": "duplicate dropped", "id": "evt-9", "log_level": "debug"}.items() <= logs[
        0
    ].items()


def test_the_window_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        make_dedup(ttl=0)


@given(st.lists(st.tuples(st.sampled_from("abcdef"), st.integers(0, 300)), max_size=60))
def test_first_matches_a_plain_model_of_the_window(events: list[tuple[str, int]]) -> None:
    dedup, _ = make_dedup(ttl=60)
    marked_until: dict[str, int] = {}
    for id_, now in sorted(events, key=lambda e: e[1]):
        expected = marked_until.get(id_, -1) <= now
        assert dedup.first(id_, now=float(now)) == expected
        if expected:
            marked_until[id_] = now + 60
    assert dedup.unique + dedup.duplicates == len(events)
