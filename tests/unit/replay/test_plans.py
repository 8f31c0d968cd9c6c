"""Reset plans in Kafka's CSV shape, and the replay filters, without a broker."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams.cluster import GroupInfo, Member
from streams.replay.csvplan import dump_plan, parse_plan
from streams.replay.errors import ActiveGroupError, PlanFileError, ReplayError
from streams.replay.filters import RecordFilter
from streams.replay.groups import require_inactive


def test_a_plan_is_written_like_kafkas_export() -> None:
    text = dump_plan({("orders", 1): 7, ("orders", 0): 3, ("a-very-long-topic-name-xy", 0): 0})
    # sorted; Jackson (Kafka's writer) quotes values longer than 24 characters
    assert text == '"a-very-long-topic-name-xy",0,0\norders,0,3\norders,1,7\n'


def test_both_of_kafkas_shapes_load() -> None:
    single = 'orders,0,3\n"orders",1,7\n\n'
    assert parse_plan(single, "g") == {("orders", 0): 3, ("orders", 1): 7}
    multi = "g,orders,0,3\nother,orders,0,99\ng,orders,1,7\n"
    assert parse_plan(multi, "g") == {("orders", 0): 3, ("orders", 1): 7}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("orders,0\n", "expected topic,partition,offset"),
        ("orders,x,3\n", "must be integers"),
        ("orders,0,-3\n", "bad topic, partition or offset"),
        ("other,orders,0,3\n", "no offsets for group 'g'"),
        ("", "no offsets for group 'g'"),
    ],
)
def test_bad_plans_say_which_line(text: str, message: str) -> None:
    with pytest.raises(PlanFileError, match=message):
        parse_plan(text, "g")


topics = st.from_regex(r"[a-zA-Z0-9._-]{1,40}", fullmatch=True)


@given(st.dictionaries(st.tuples(topics, st.integers(0, 999)), st.integers(0, 2**62), min_size=1))
def test_a_written_plan_reads_back_identically(offsets: dict[tuple[str, int], int]) -> None:
    assert parse_plan(dump_plan(offsets), "g") == offsets


HEADERS = [("ce_type", b"order.placed"), ("tenant", b"acme")]


def test_filters_combine_kinds_and_accept_any_value_of_one_kind() -> None:
    assert RecordFilter().matches(None, None)
    by_type = RecordFilter.of(types=["order.shipped", "order.placed"])
    assert by_type.matches(b"k", HEADERS)
    assert not by_type.matches(b"k", [("ce_type", b"order.paid")])
    assert not by_type.matches(b"k", None)
    both = RecordFilter.of(types=["order.placed"], keys=["k1"], headers=["tenant=acme"])
    assert both.matches(b"k1", HEADERS)
    assert not both.matches(b"k2", HEADERS)
    assert not both.matches(b"k1", [("ce_type", b"order.placed"), ("tenant", b"other")])
    with pytest.raises(ReplayError, match="--header expects NAME=VALUE"):
        RecordFilter.of(headers=["tenant"])


def test_a_reset_refused_for_a_static_member_says_why_it_is_still_there() -> None:
    static = Member("m-1", "rdkafka", "/127.0.0.1", (("orders", 0),), instance_id="shop-0-ab")
    with pytest.raises(ActiveGroupError, match=r"1 static .*until its session times out"):
        require_inactive(GroupInfo("shop", "Stable", (static,)))
    dynamic = Member("m-2", "rdkafka", "/127.0.0.1", (("orders", 0),))
    with pytest.raises(ActiveGroupError) as refused:
        require_inactive(GroupInfo("shop", "Stable", (dynamic,)))
    assert "static" not in str(refused.value)
