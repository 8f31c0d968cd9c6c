"""In-flight bookkeeping: a commit never passes a record whose work is unfinished."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams.pipeline.offsets import PartitionOffsets


@st.composite
def scenario(draw: st.DrawFn) -> tuple[list[int], list[int], list[int]]:
    """Increasing offsets (with gaps, as compaction and transactions leave), the number of
    outputs each record sends, and an arbitrary order in which all tokens are released."""
    gaps = draw(st.lists(st.integers(1, 3), min_size=1, max_size=30))
    offsets = [sum(gaps[: i + 1]) for i in range(len(gaps))]
    outputs = draw(st.lists(st.integers(0, 3), min_size=len(offsets), max_size=len(offsets)))
    tokens = [i for i, n in enumerate(outputs) for _ in range(n + 1)]  # +1: the processing
    order = draw(st.permutations(tokens))
    return offsets, outputs, list(order)


@given(scenario())
def test_committable_is_the_end_of_the_finished_prefix(
    case: tuple[list[int], list[int], list[int]],
) -> None:
    offsets, outputs, order = case
    po = PartitionOffsets("t", 0)
    entries = [po.begin(o) for o in offsets]
    for entry, n in zip(entries, outputs, strict=True):
        for _ in range(n):
            entry.hold()
    left = [n + 1 for n in outputs]
    for i in order:
        entries[i].release()
        left[i] -= 1
        finished = 0
        while finished < len(left) and left[finished] == 0:
            finished += 1
        expected = offsets[finished - 1] + 1 if finished else None
        assert po.committable() == expected
    assert po.committable() == offsets[-1] + 1
    assert po.in_flight == 0


def test_a_failed_output_holds_the_commit_back_for_good() -> None:
    po = PartitionOffsets("t", 0)
    first, second = po.begin(10), po.begin(11)
    first.hold()
    first.failed = True
    first.release()
    first.release()
    second.release()
    assert po.committable() is None


def test_pending_commit_reports_only_progress() -> None:
    po = PartitionOffsets("t", 0)
    po.begin(5).release()
    assert po.pending_commit() == 6
    po.committed = 6
    assert po.pending_commit() is None


def test_offsets_must_increase() -> None:
    po = PartitionOffsets("t", 0)
    po.begin(3)
    with pytest.raises(ValueError, match="offset 3 after 3"):
        po.begin(3)
