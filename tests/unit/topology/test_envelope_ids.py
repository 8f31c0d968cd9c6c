"""Ids derived from their cause: an event a running topology makes for a record has the
same id every time the record is processed (a redo after a crash or a rewind writes the
same ids, so ``dedup()`` downstream drops the copies), and a different one for every other
cause, source or index. Elsewhere every id is new."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from streams.envelope import CURRENT_CAUSE, Envelope, derived_id, new_id
from streams.schemas import default_catalog
from streams.testing import TestDriver
from streams.topology import TopologyBuilder, owned
from streams.topology.execution.context import RecordCause

causes = st.one_of(st.builds(new_id), st.uuids().map(str), st.text(min_size=1, max_size=60))
sources = st.text(min_size=1, max_size=30)
indexes = st.integers(0, 10_000)


@given(causes, sources, indexes)
def test_a_derived_id_is_the_same_every_time_and_never_its_causes(
    cause: str, source: str, index: int
) -> None:
    made = derived_id(cause, source, index)
    assert made == derived_id(cause, source, index)
    assert made != cause
    assert str(uuid.UUID(made)) == made  # a UUID, in its canonical form


@given(st.builds(new_id), sources, indexes)
def test_one_derived_from_a_uuid7_is_a_uuid7_of_its_causes_millisecond(
    cause: str, source: str, index: int
) -> None:
    made = uuid.UUID(derived_id(cause, source, index))
    assert made.version == 7 and made.variant == uuid.RFC_4122
    assert made.hex[:12] == uuid.UUID(cause).hex[:12]  # the 48-bit Unix millisecond


@given(
    st.tuples(causes, sources, indexes),
    st.tuples(causes, sources, indexes),
)
def test_derived_ids_differ_when_cause_source_or_index_does(
    one: tuple[str, str, int], other: tuple[str, str, int]
) -> None:
    if one != other:
        assert derived_id(*one) != derived_id(*other)


class Cause:
    """A record in hand, as the runtime's plan holds it."""

    def __init__(self, env: Envelope) -> None:
        self.envelope = env
        self.caused = 0


def test_events_made_while_a_record_is_in_hand_count_up_from_its_id() -> None:
    order = Envelope.new("order.placed", {"n": 1})
    made = []
    token = CURRENT_CAUSE.set(RecordCause(Cause(order)))
    try:
        made = [order.follow("a", {}), Envelope.new("b", {}), order.follow("a", {})]
    finally:
        CURRENT_CAUSE.reset(token)
    source = made[0].source
    assert [e.id for e in made] == [derived_id(order.id, source, n) for n in range(3)]
    assert made[1].correlation_id == made[1].id  # a new conversation, as ever
    assert order.follow("a", {}).id != made[0].id  # with no record in hand: a new id


def enrich_topology(app: str = "app") -> TopologyBuilder:
    b = TopologyBuilder(app)
    b.source("in", type="order.placed", version=2).map(
        lambda e: e.follow("order.placed", dict(e.data), version=2)
    ).to(owned("out"), type="order.placed", version=2)
    return b


def test_the_same_records_processed_twice_come_out_with_the_same_ids() -> None:
    data = {"order_id": "o-1", "customer_id": "c-1", "items": [], "total_cents": 1}
    orders = [Envelope.new("order.placed", data, version=2, key=f"c-{n}") for n in range(5)]
    runs = []
    for _ in range(2):  # as a redo after a crash: another process, the same input
        with TestDriver(enrich_topology().build(default_catalog())) as driver:
            driver.pipe("in", orders)
            runs.append([e.id for e in driver.read("app-out")])
    assert runs[0] == runs[1]
    assert len(set(runs[0])) == 5 and not set(runs[0]) & {o.id for o in orders}
    with TestDriver(enrich_topology("other").build(default_catalog())) as driver:
        driver.pipe("in", orders)  # another app following the same orders: other ids
        assert not {e.id for e in driver.read("other-out")} & set(runs[0])
