"""The in-memory TestDriver: steps, processors, ordering and error policies, no broker."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import factories
import pytest

from streams.codec import EncodeError
from streams.codec.envelope_wire import envelope_value, type_version_bytes
from streams.envelope import DEFAULT_SOURCE, Envelope
from streams.errors import StreamsError
from streams.schemas import default_catalog
from streams.testing import TestDriver
from streams.topology import (
    ErrorAction,
    ProcessingError,
    ProcessingFailure,
    ProcessorContext,
    SinkTypeError,
    Topology,
    TopologyBuilder,
    owned,
)
from streams.topology.partitioning import partition_for

T, V = "order.placed", 2


def order(n: int, key: str = "k1", total: int = 100) -> Envelope:
    return factories.order(n, key, total_cents=total)


def with_total(env: Envelope, total: int) -> Envelope:
    return env.with_data({**env.data, "total_cents": total})


def build(wire: Any, *, on_error: Any = None) -> Topology:
    b = TopologyBuilder("app", on_error=on_error)
    wire(b.source("in", type=T, version=V))
    return b.build(default_catalog())


def totals(envs: list[Envelope]) -> list[int]:
    return [e.data["total_cents"] for e in envs]


def test_map_filter_flat_map_peek_and_rekey_compose_in_order() -> None:
    seen: list[str] = []

    def wire(s: Any) -> None:
        (
            s.filter(lambda e: e.data["total_cents"] > 0)
            .map(lambda e: with_total(e, e.data["total_cents"] * 10))
            .flat_map(lambda e: [e, with_total(e, e.data["total_cents"] + 1)])
            .peek(lambda e: seen.append(e.data["order_id"]))
            .rekey(lambda e: e.data["order_id"])
            .to(owned("out"), type=T, version=V)
        )

    with TestDriver(build(wire)) as driver:
        driver.pipe("in", [order(1, total=1), order(2, total=0), order(3, total=3)])
        out = driver.read("app-out")
    assert totals(out) == [10, 11, 30, 31]
    assert [e.key for e in out] == ["o-1", "o-1", "o-3", "o-3"]
    assert seen == ["o-1", "o-1", "o-3", "o-3"]
    assert driver.read("app-out") == []  # read drains; records() does not
    assert len(driver.records("app-out")) == 4


def test_branch_first_match_wins_and_default_catches_the_rest() -> None:
    def wire(s: Any) -> None:
        r = s.branch(
            big=lambda e: e.data["total_cents"] >= 100,
            mid=lambda e: e.data["total_cents"] >= 10,
            default="small",
        )
        for name, stream in r.items():
            stream.to(owned(name), type=T, version=V)

    with TestDriver(build(wire)) as d:
        d.pipe("in", [order(1, total=500), order(2, total=50), order(3, total=5)])
        assert (totals(d.read("app-big")), totals(d.read("app-mid"))) == ([500], [50])
        assert totals(d.read("app-small")) == [5]


class Splitter:
    """A class processor: instantiated once per run, init/close called."""

    events: list[str] = []

    def init(self, ctx: ProcessorContext) -> None:
        Splitter.events.append(f"init {ctx.node}")

    def process(self, env: Envelope, ctx: ProcessorContext) -> None:
        meta = ctx.record
        tagged = env.with_data({**env.data, "order_id": f"{meta.topic}/{meta.offset}"})
        ctx.forward(tagged, to="even" if meta.offset % 2 == 0 else "odd")

    def close(self) -> None:
        Splitter.events.append("close")


def test_class_processor_forwards_to_named_outputs_and_sees_record_metadata() -> None:
    def wire(s: Any) -> None:
        outs = s.process(Splitter, outputs=["even", "odd"])
        outs["even"].to(owned("even"), type=T, version=V)
        outs["odd"].to(owned("odd"), type=T, version=V)

    Splitter.events.clear()
    with TestDriver(build(wire)) as d:
        d.pipe("in", [order(i) for i in range(3)])
        assert [e.data["order_id"] for e in d.read("app-even")] == ["in/0", "in/2"]
        assert [e.data["order_id"] for e in d.read("app-odd")] == ["in/1"]
    assert Splitter.events == ["init splitter", "close"]


def test_function_processor_may_return_envelopes() -> None:
    def double(env: Envelope, _ctx: ProcessorContext) -> Iterator[Envelope]:
        yield env
        yield env

    with TestDriver(build(lambda s: s.process(double).to("out", type=T, version=V))) as d:
        d.pipe("in", order(1))
        assert len(d.read("out")) == 2


def test_outputs_keep_per_key_order_and_land_on_the_brokers_partition() -> None:
    t = build(lambda s: s.to("out", type=T, version=V))
    inputs = [order(i, key=f"k{i % 7}") for i in range(50)]
    with TestDriver(t, partitions=4) as d:
        d.pipe("in", inputs)
        records = d.records("out")
    for key in {e.key for e in inputs}:
        want = [e.data["order_id"] for e in inputs if e.key == key]
        assert [r.envelope.data["order_id"] for r in records if r.envelope.key == key] == want
    for r in records:
        assert r.partition == partition_for(r.key or b"", 4)
    per_partition: dict[int, list[int]] = {}
    for r in records:
        per_partition.setdefault(r.partition, []).append(r.offset)
    assert all(offs == list(range(len(offs))) for offs in per_partition.values())


def test_a_failing_step_stops_with_the_step_and_offset_by_default() -> None:
    def boom(env: Envelope) -> Envelope:
        if env.data["total_cents"] == 13:
            raise ValueError("unlucky")
        return env

    with TestDriver(build(lambda s: s.map(boom).to("out", type=T, version=V))) as d:
        d.pipe("in", order(1))
        with pytest.raises(ProcessingError, match=r"step 'boom' failed on in\[0\]@1: ValueError"):
            d.pipe("in", order(2, total=13))
        assert len(d.read("out")) == 1


def test_skip_policy_records_the_failure_and_goes_on() -> None:
    def boom(env: Envelope) -> Envelope:
        raise KeyError("x")

    def wire(s: Any) -> None:
        s.map(boom, on_error="skip").to("out", type=T, version=V)

    with TestDriver(build(wire)) as d:
        d.pipe("in", [order(1), order(2)])
    assert [(f.step, f.record.offset, type(f.error)) for f in d.skipped] == [
        ("boom", 0, KeyError),
        ("boom", 1, KeyError),
    ]


def test_step_policy_overrides_the_topology_policy() -> None:
    decisions: list[str] = []

    def policy(failure: ProcessingFailure) -> ErrorAction:
        decisions.append(failure.step)
        return ErrorAction.SKIP

    def wire(s: Any) -> None:
        s.map(lambda e: 1 / 0, name="div", on_error="fail").to("out", type=T, version=V)

    with TestDriver(build(wire, on_error=policy)) as d, pytest.raises(ProcessingError):
        d.pipe("in", order(1))
    assert decisions == []


def test_sink_refuses_an_envelope_of_another_type() -> None:
    def wire(s: Any) -> None:
        s.map(lambda e: e.follow("order.rejected", {"order_id": "x"})).to(
            "out", type=T, version=V, name="out"
        )

    with TestDriver(build(wire)) as d, pytest.raises(ProcessingError) as info:
        d.pipe("in", order(1))
    assert isinstance(info.value.failure.error, SinkTypeError)
    assert info.value.failure.step == "out"


def test_a_payload_that_does_not_fit_the_sink_schema_fails_in_the_driver() -> None:
    def wire(s: Any) -> None:
        s.map(lambda e: e.with_data({"order_id": 5})).to("out", type=T, version=V)

    with TestDriver(build(wire)) as d, pytest.raises(ProcessingError) as info:
        d.pipe("in", order(1))
    assert isinstance(info.value.failure.error, EncodeError)


def test_bad_bytes_go_to_the_dlq_by_default_and_the_partition_moves_on() -> None:
    t = build(lambda s: s.to("out", type=T, version=V))
    with TestDriver(t) as d:
        d.pipe_raw("in", b"\x00garbage", key=b"k")
        d.pipe("in", order(1))
        (dead,) = d.dead_letters
        assert (dead.topic, dead.value, dead.key) == ("app-in-dlq", b"\x00garbage", b"k")
        assert (dead.info.stage.value, dead.info.step, dead.info.origin.offset) == (
            "decode",
            "decode",
            0,
        )
        assert dead.info.exception == "streams.codec.errors.MalformedRecordError"
        assert [e.data["order_id"] for e in d.read("out")] == ["o-1"]


def test_a_policy_of_the_users_decides_for_bad_bytes_too() -> None:
    skipping = build(lambda s: s.to("out", type=T, version=V), on_error="skip")
    with TestDriver(skipping) as d:
        d.pipe_raw("in", b"\x00garbage", key=b"k")
        d.pipe("in", order(1))
        assert [f.step for f in d.skipped] == ["decode"] and d.dead_letters == []
        assert len(d.read("out")) == 1
    stopping = build(lambda s: s.to("out", type=T, version=V), on_error="fail")
    with TestDriver(stopping) as d, pytest.raises(ProcessingError, match="step 'decode'"):
        d.pipe_raw("in", b"\x00garbage", key=b"k")


def _encoded_as(env: Envelope, type_: str, version: int) -> tuple[bytes, list[Any]]:
    """An envelope record (and headers) claiming ``type_``@``version``: the catalog's
    codec would refuse to write one it does not know."""
    value = envelope_value(env, b"", type_version_bytes(type_, version))
    return value, [("ce_id", env.id.encode()), ("ce_type", type_.encode()),
                   ("ce_dataversion", str(version).encode())]  # fmt: skip


def test_poison_records_interleaved_with_good_ones_are_dead_lettered_in_place() -> None:
    t = build(lambda s: s.to("out", type=T, version=V))
    good = [order(n) for n in range(1, 5)]
    other = Envelope.new("order.rejected", {"order_id": "x", "reason": "OTHER"}, key="k")
    unknown = Envelope.new("no.such.type", {}, key="k")
    v99 = order(9)
    with TestDriver(t) as d:
        d.pipe("in", good[0])
        d.pipe_raw("in", b"\x00garbage", key=b"k")
        d.pipe("in", good[1])
        d.pipe("in", other)  # a type the source does not read
        d.pipe_raw("in", *_encoded_as(unknown, "no.such.type", 1), key=b"k")
        d.pipe("in", good[2])
        d.pipe_raw("in", *_encoded_as(v99, T, 99), key=b"k")
        d.pipe("in", good[3])
        assert [e.data["order_id"] for e in d.read("out")] == ["o-1", "o-2", "o-3", "o-4"]
        dead = d.dead_letters
    assert [r.info.origin.offset for r in dead] == [1, 3, 4, 6]
    assert [r.info.exception.rsplit(".", 1)[-1] for r in dead] == [
        "MalformedRecordError",
        "UnexpectedTypeError",  # another type than the source reads
        "UnexpectedTypeError",  # a type no schema has: not the source's either
        "UnknownVersionError",
    ]


def test_on_error_dlq_dead_letters_a_failing_step_and_goes_on() -> None:
    def boom(env: Envelope) -> Envelope:
        if env.data["total_cents"] == 13:
            raise ValueError("unlucky")
        return env

    with TestDriver(build(lambda s: s.map(boom, on_error="dlq").to("out", type=T, version=V))) as d:
        d.pipe("in", [order(1), order(2, total=13), order(3)])
        (dead,) = d.dead_letters
        assert (dead.info.step, dead.info.stage.value, dead.info.exception) == (
            "boom",
            "process",
            "ValueError",
        )
        assert len(d.read("out")) == 2


def test_sources_resolve_older_writers_to_their_reader_version() -> None:
    got: list[Envelope] = []
    t = build(lambda s: s.peek(got.append).to("out", type=T, version=V))
    v1 = Envelope.new(
        T, {"order_id": "o", "customer_id": "c", "items": [], "total_cents": 0}, key="c"
    )
    with TestDriver(t) as d:
        d.pipe("in", v1)
    assert (got[0].version, got[0].data["currency"]) == (2, "EUR")


def test_forward_to_an_undeclared_output_fails_the_record() -> None:
    def wrong(env: Envelope, ctx: ProcessorContext) -> None:
        ctx.forward(env, to="elsewhere")

    with (
        TestDriver(build(lambda s: s.process(wrong).to("out", type=T, version=V))) as d,
        pytest.raises(ProcessingError, match="undeclared output 'elsewhere'"),
    ):
        d.pipe("in", order(1))


def test_unknown_input_topic_is_an_error() -> None:
    with (
        TestDriver(build(lambda s: s.to("out", type=T, version=V))) as d,
        pytest.raises(Exception, match="does not read 'nope'"),
    ):
        d.pipe("nope", order(1))


def test_reading_a_topic_the_topology_does_not_write_is_an_error() -> None:
    with TestDriver(build(lambda s: s.to(owned("out"), type=T, version=V))) as d:
        assert d.read("app-out") == []  # written by the topology, nothing yet
        with pytest.raises(StreamsError, match="does not write 'app-otu'"):
            d.read("app-otu")  # a typo is not "no output"


def test_an_output_the_app_made_has_the_app_as_its_source() -> None:
    """wire-format.md: ``source`` is the producing service; the cause's is one hop back."""

    def wire(s: Any) -> None:
        s.map(lambda e: e.follow(T, dict(e.data), version=V)).to(owned("made"), type=T, version=V)
        s.map(lambda e: e.follow(T, dict(e.data), version=V, source="pricing")).to(
            owned("named"), type=T, version=V
        )
        s.to(owned("passed"), type=T, version=V)

    placed = Envelope.new(T, order(1).data, version=V, key="k1")  # the default source
    shop = Envelope.new(T, order(2).data, version=V, key="k1", source="shop")
    with TestDriver(build(wire)) as driver:
        driver.pipe("in", [placed, shop])
        made = driver.read("app-made")
        assert [e.source for e in made] == ["app", "app"]
        assert [e.causation_id for e in made] == [placed.id, shop.id]
        assert [e.source for e in driver.read("app-named")] == ["pricing", "pricing"]
        passed = driver.read("app-passed")
        assert [(e.id, e.source) for e in passed] == [(placed.id, placed.source), (shop.id, "shop")]


def test_a_step_sees_the_app_as_the_source_of_what_it_makes_and_nothing_else_does() -> None:
    made: list[str] = []

    def follow(e: Envelope) -> Envelope:
        out = e.follow(T, dict(e.data), version=V)
        made.append(out.source)  # in the step already, not only once written
        return out

    with TestDriver(build(lambda s: s.map(follow).to(owned("out"), type=T, version=V))) as d:
        d.pipe("in", [order(1)])
        assert made == ["app"] and [e.source for e in d.read("app-out")] == ["app"]
    assert Envelope.new(T, order(2).data, version=V).source == DEFAULT_SOURCE  # after a turn
