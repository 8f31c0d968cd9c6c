"""Property: whatever fails and whenever the process dies, each key's records come out
once (first copies) and in order, poison records end in the DLQ, nothing else does.

The model runtime (``tests.unit.failures.test_model``) runs the handler. What survives a crash is
what a runtime makes durable, in the order the handler requires: a *flush* waits for every
write (outputs, retry and DLQ records) to be acknowledged, then writes the waiting-room
stores to their changelog and notes the read positions; a *commit* then commits those
positions (so the state is never behind the committed offsets, and may be ahead). A crash
restarts from the flushed state and the committed positions; records written since the
last flush survive, or (``lose`` set) are lost as unacknowledged writes would be.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.failures.handler import FailureHandler
from streams.failures.parked import ParkedRecord
from streams.failures.policy import RetryPolicy
from streams.failures.waiting import WaitingEntry
from tests.unit.failures.test_model import INPUT, ModelRuntime, Msg

POLICY = RetryPolicy.parse("1s, 2s, 3s")
Store = dict[bytes, WaitingEntry[ParkedRecord]]


@dataclass
class Durable:
    """What a crash leaves: flushed stores, committed positions, acknowledged writes."""

    stores: dict[tuple[str, int], Store] = field(default_factory=dict)
    flushed: dict[tuple[str, int], Store] = field(default_factory=dict)
    flushed_positions: dict[str, int] = field(default_factory=dict)
    committed: dict[str, int] = field(default_factory=dict)
    written: dict[str, int] = field(default_factory=dict)  # topic lengths at the flush
    outputs: int = 0
    dead: int = 0

    def store_for(self, topic: str, partition: int) -> Store:
        return self.stores.setdefault((topic, partition), {})


def fails(value: bytes, tried: int) -> None:
    behaviour = value.split(b":")[1]
    if behaviour == b"poison" or (behaviour == b"flaky" and tried < 2):
        raise TimeoutError(value.decode())


RECORDS = st.lists(
    st.tuples(st.sampled_from([b"A", b"B", b"C"]), st.sampled_from([b"ok", b"flaky", b"poison"])),
    min_size=1,
    max_size=10,
)
EVENTS = st.lists(
    st.one_of(
        st.tuples(st.just("run"), st.integers(1, 40)),
        st.tuples(st.just("flush"), st.just(0)),
        st.tuples(st.just("commit"), st.just(0)),
        st.tuples(st.just("crash"), st.integers(0, 1)),
    ),
    max_size=14,
)


@settings(max_examples=150, deadline=None)
@given(records=RECORDS, events=EVENTS)
def test_order_and_delivery_survive_failures_and_crashes(
    records: list[tuple[bytes, bytes]], events: list[tuple[str, int]]
) -> None:
    durable = Durable()
    rt = ModelRuntime(FailureHandler("app", POLICY, store_for=durable.store_for), fails)
    values = [(key, b"%d:%s" % (i, behaviour)) for i, (key, behaviour) in enumerate(records)]
    for key, value in values:
        rt.send(INPUT, key, value, [("ce_id", value)])
    durable.written = {t: len(log) for t, log in rt.topics.items()}
    for kind, n in events:
        if kind == "run":
            for _ in range(n):
                rt.step()
        elif kind == "flush":  # every write acknowledged, then the stores' changelog
            durable.written = {t: len(log) for t, log in rt.topics.items()}
            durable.outputs, durable.dead = len(rt.outputs), len(rt.dead)
            durable.flushed = {tp: dict(store) for tp, store in durable.stores.items()}
            durable.flushed_positions = dict(rt.positions)
        elif kind == "commit":
            durable.committed = dict(durable.flushed_positions)
        else:
            durable.stores.clear()
            durable.stores.update({tp: dict(store) for tp, store in durable.flushed.items()})
            restarted = ModelRuntime(
                FailureHandler("app", POLICY, store_for=durable.store_for), fails
            )
            topics: dict[str, list[Msg]] = rt.topics
            outputs, dead = rt.outputs, rt.dead
            if n:  # writes not acknowledged by the last flush are lost
                topics = {t: log[: durable.written.get(t, 0)] for t, log in topics.items()}
                outputs, dead = outputs[: durable.outputs], dead[: durable.dead]
            restarted.topics, restarted.outputs, restarted.dead = topics, outputs, dead
            restarted.now, restarted.tries = rt.now, rt.tries
            restarted.positions = dict(durable.committed)
            durable.flushed_positions = dict(durable.committed)  # the next commit's are new
            rt = restarted
    rt.run(rt.drained, steps=20_000)

    poison = {v for _, v in values if v.endswith(b":poison")}
    assert {v for v, _ in rt.dead} == poison
    first_output: dict[bytes, tuple[bytes, datetime]] = {}
    for key, value, at in rt.outputs:
        first_output.setdefault(value, (key, at))
    first_dead: dict[bytes, datetime] = {}
    for value, at in rt.dead:
        first_dead.setdefault(value, at)
    for key in (b"A", b"B", b"C"):
        expected = [v for k, v in values if k == key and v not in poison]
        assert [v for v, (k, _) in first_output.items() if k == key] == expected
        # A record is output only once the poison records before it were dead-lettered.
        mine = [v for k, v in values if k == key]
        for i, earlier in enumerate(mine):
            for later in mine[i + 1 :]:
                if earlier in poison and later not in poison:
                    assert first_dead[earlier] <= first_output[later][1]
    assert all(not store for store in durable.stores.values())  # every key free again
