"""Kafka's default partitioner, so driver outputs land where the broker puts them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams.topology.partitioning import murmur2, partition_for


@pytest.mark.parametrize(
    ("data", "expected"),
    [  # the vectors of Kafka's own UtilsTest.testMurmur2
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
    ],
)
def test_murmur2_matches_the_java_client(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


@given(st.binary(min_size=1, max_size=64), st.integers(min_value=1, max_value=256))
def test_partition_is_in_range_and_stable(key: bytes, partitions: int) -> None:
    p = partition_for(key, partitions)
    assert 0 <= p < partitions
    assert p == partition_for(key, partitions)
