"""Commit metadata naming the offsets that finished ahead of the committed one: what the
next owner of a partition skips. A bitset in base64 (``docs/wire-format.md``)."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams.pipeline.offsets import (
    AHEAD_MARK,
    AHEAD_SPAN,
    PartitionOffsets,
    decode_ahead,
    encode_ahead,
)


@given(
    st.integers(min_value=0, max_value=2**62),
    st.sets(st.integers(min_value=1, max_value=AHEAD_SPAN)),
)
def test_what_is_encoded_decodes_to_the_same_offsets(offset: int, gaps: set[int]) -> None:
    ahead = {offset + gap for gap in gaps}
    metadata = encode_ahead(offset, sorted(ahead))
    assert decode_ahead(offset, metadata) == ahead
    assert len(metadata) <= 4096  # what Kafka keeps of a commit's metadata


def test_the_documented_decoder_reads_it() -> None:
    metadata = encode_ahead(100, [102, 103, 110])
    bits = int.from_bytes(base64.b64decode(metadata[len("streams-ahead:1:") :]), "little")
    assert {100 + 1 + i for i in range(bits.bit_length()) if bits >> i & 1} == {102, 103, 110}


def test_an_offset_too_far_ahead_is_left_out_and_one_not_ahead_is_refused() -> None:
    assert decode_ahead(0, encode_ahead(0, [5, AHEAD_SPAN + 1])) == {5}
    with pytest.raises(ValueError, match="not past the committed offset"):
        encode_ahead(10, [10])


@pytest.mark.parametrize("metadata", [None, "", "someone else's", AHEAD_MARK + "%%%"])
def test_metadata_another_tool_wrote_names_nothing(metadata: str | None) -> None:
    assert decode_ahead(7, metadata) == frozenset()


def test_a_commit_carries_what_finished_ahead_and_is_due_when_only_that_changed() -> None:
    po = PartitionOffsets("in", 0, committed=5)
    assert po.pending_commit() is None
    po.ahead = (7, 9)  # 5 still in flight, 6 and 8 waiting: nothing finished in order
    assert po.pending_commit() == 5
    sent = po.commit_offset(5)
    assert (sent.offset, decode_ahead(5, sent.metadata)) == (5, {7, 9})
    po.committed_now(5)
    assert po.pending_commit() is None
    po.position = 8  # 5, 6 and 7 finished: 9 is still ahead
    po.ahead = (9,)
    assert po.pending_commit() == 8
    assert po.commit_offset(8).metadata == encode_ahead(8, [9])
