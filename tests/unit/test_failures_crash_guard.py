"""A record that kills the process every time ends in the DLQ; the partition moves on."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.failures.crash_guard import CrashGuard, DictByteStore
from streams.failures.errors import PoisonRecordError
from streams.failures.policy import RetryPolicy, Verdict


class ProcessDied(BaseException):
    """Raised by the model processor: nothing after it runs, as in a real crash."""


def run_partition(
    records: int, killers: set[int], commit_every: int, max_restarts: int = 200
) -> tuple[list[int], list[int], int]:
    """A model runtime over one partition: processes records in order, commits every
    ``commit_every`` records, and dies whenever it processes a killer. Restarts resume at
    the committed offset with the durable store. Returns (processed, dead-lettered,
    restarts)."""
    durable: dict[bytes, bytes] = {}
    committed = 0
    processed: list[int] = []
    dead: list[int] = []
    for restarts in range(max_restarts):
        store = DictByteStore(durable)  # every write durable at once: the careful flush
        guard = CrashGuard(store, "orders", careful_after=2, max_crashes=3)
        guard.assigned(committed)
        try:
            for offset in range(committed, records):
                if guard.before(offset) is Verdict.DEAD_LETTER:
                    dead.append(offset)
                else:
                    if offset in killers:
                        raise ProcessDied
                    processed.append(offset)
                guard.after(offset)
                if (offset + 1) % commit_every == 0 or offset + 1 == records:
                    committed = offset + 1
                    guard.committed(committed)
            return processed, dead, restarts
        except ProcessDied:
            continue
    raise AssertionError(f"still crashing after {max_restarts} restarts")


def test_no_crash_costs_one_write_per_assignment() -> None:
    store = DictByteStore()
    guard = CrashGuard(store, "orders")
    assert not guard.assigned(0)
    for offset in range(100):
        assert guard.before(offset) is Verdict.RETRY
        guard.after(offset)
    guard.committed(100)
    assert store.data == {b"crash:orders:starts": b"0:1"}


def test_a_killer_record_is_dead_lettered_and_the_rest_processed() -> None:
    processed, dead, restarts = run_partition(10, killers={5}, commit_every=3)
    assert set(dead) == {5}
    assert sorted(set(processed)) == [0, 1, 2, 3, 4, 6, 7, 8, 9]
    assert restarts <= 2 + 3 + 2  # careful after 2 starts at one offset, 3 careful deaths


@settings(max_examples=100, deadline=None)
@given(
    records=st.integers(1, 30),
    killers=st.sets(st.integers(0, 29), max_size=3),
    commit_every=st.integers(1, 7),
)
def test_every_killer_and_only_killers_end_in_the_dlq(
    records: int, killers: set[int], commit_every: int
) -> None:
    killers = {k for k in killers if k < records}
    processed, dead, _ = run_partition(records, killers, commit_every)
    assert set(dead) == killers  # a DLQ copy may repeat after a crash: at least once
    assert set(processed) == set(range(records)) - killers


def test_a_poison_record_is_never_retried() -> None:
    guard = CrashGuard(DictByteStore(), "orders", max_crashes=3)
    error = guard.poison(5)
    assert isinstance(error, PoisonRecordError)
    assert "at 3 crashes" in str(error)
    assert RetryPolicy().verdict(error) is Verdict.DEAD_LETTER


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        CrashGuard(DictByteStore(), "orders", max_crashes=0)
