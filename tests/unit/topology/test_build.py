"""Building a topology: the DSL wires nodes, and build() refuses broken topologies clearly."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.envelope import Envelope
from streams.schemas import default_catalog
from streams.topology import (
    TopologyBuilder,
    TopologyError,
    TopologyLoadError,
    TopologyValidationError,
    load_topology,
    owned,
)

ROOT = Path(__file__).resolve().parents[3]


def ident(env: Envelope) -> Envelope:
    return env


def problems_of(builder: TopologyBuilder) -> list[str]:
    with pytest.raises(TopologyValidationError) as info:
        builder.build(default_catalog())
    return info.value.problems


def test_the_orders_example_builds_and_names_its_topics() -> None:
    t = load_topology(ROOT / "topology" / "orders.py")
    assert t.app_id == "orders"
    assert t.topics_read == ["orders"]
    assert t.topics_written == ["orders-accepted", "orders-rejected"]
    assert [o.name for o in t.owned_topics] == ["orders-accepted", "orders-rejected"]


def test_unknown_source_schema_names_the_known_versions() -> None:
    b = TopologyBuilder("app")
    b.source("in", type="order.placed", version=9).to("out", type="order.placed", version=2)
    (problem,) = problems_of(b)
    assert "source 'source-in' uses unknown schema order.placed@9" in problem
    assert "known versions: v1, v2" in problem


def test_sink_of_a_type_not_in_the_catalog_is_refused() -> None:
    b = TopologyBuilder("app")
    b.source("in", type="order.placed", version=2).to("out", type="no.such.type", version=1)
    (problem,) = problems_of(b)
    assert "sink 'sink-out' uses unknown schema no.such.type@1" in problem
    assert "no schemas/no.such.type/ folder" in problem


def test_cycle_between_steps_is_reported_as_a_path() -> None:
    b = TopologyBuilder("app")
    b.add_source("src", "in", type="order.placed", version=2)
    b.add_processor("a", ident, ["src", "b"])
    b.add_processor("b", ident, ["a"])
    b.add_sink("out", "out", ["b"], type="order.placed", version=2)
    assert "cycle: 'a' -> 'b' -> 'a'" in problems_of(b)


def test_cycle_through_a_topic_is_refused() -> None:
    b = TopologyBuilder("app")
    b.source("loop", type="order.placed", version=2).to("loop", type="order.placed", version=2)
    (problem,) = problems_of(b)
    assert "cycle through topic 'loop'" in problem


def test_unused_branch_output_and_dangling_step_are_refused() -> None:
    b = TopologyBuilder("app")
    src = b.source("in", type="order.placed", version=2)
    routes = src.branch(big=lambda e: True, default="small", name="route")
    routes["big"].to("big", type="order.placed", version=2)
    src.map(ident, name="dangling")
    problems = problems_of(b)
    assert any("output 'small' of step (branch) 'route' is unused" in p for p in problems)
    assert any("step (map) 'dangling' goes nowhere" in p for p in problems)


def test_unknown_parent_duplicate_name_and_bad_app_id() -> None:
    b = TopologyBuilder("my app")
    b.add_source("src", "in", type="order.placed", version=2)
    b.add_source("src", "in2", type="order.placed", version=2)
    b.add_sink("out", "out", ["nope"], type="order.placed", version=2)
    problems = problems_of(b)
    assert any("may only use letters" in p for p in problems)
    assert "two nodes are named 'src'" in problems
    assert "'out' reads from unknown node 'nope'" in problems


def test_every_problem_is_reported_at_once_in_one_message() -> None:
    b = TopologyBuilder("app")
    b.source("in", type="order.placed", version=7).to("out", type="nope", version=1)
    with pytest.raises(TopologyValidationError) as info:
        b.build(default_catalog())
    assert "2 problem(s)" in str(info.value)


def test_a_step_needs_a_function() -> None:
    src = TopologyBuilder("app").source("in", type="order.placed", version=2)
    with pytest.raises(TopologyError, match="map step needs a function"):
        src.map("not callable")  # type: ignore[arg-type]


def test_step_names_default_to_function_names_made_unique() -> None:
    b = TopologyBuilder("app")
    b.source("in", type="order.placed", version=2).map(ident).map(ident).to(
        owned("out"), type="order.placed", version=2
    )
    t = b.build(default_catalog())
    assert list(t.nodes) == ["source-in", "ident", "ident-2", "sink-out"]


def test_with_app_id_moves_owned_topics() -> None:
    t = load_topology(ROOT / "topology" / "orders.py", app_id="shop-eu")
    assert t.app_id == "shop-eu"
    assert t.topics_written == ["shop-eu-accepted", "shop-eu-rejected"]


def test_build_params_reach_the_topology_file() -> None:
    t = load_topology(ROOT / "topology" / "orders.py", params={"input": "placed"})
    assert t.topics_read == ["placed"]


def test_loader_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(TopologyLoadError, match="no topology file"):
        load_topology(tmp_path / "missing.py")
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    with pytest.raises(TopologyLoadError, match="exposes no topology"):
        load_topology(empty)
    with pytest.raises(TopologyLoadError, match="takes no parameter 'colour'"):
        load_topology(ROOT / "topology" / "orders.py", params={"colour": "red"})
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(TopologyLoadError, match="importing failed: RuntimeError: boom"):
        load_topology(broken)


def test_a_module_level_topology_object_is_found(tmp_path: Path) -> None:
    f = tmp_path / "plain.py"
    f.write_text(
        "from streams.topology import TopologyBuilder, owned\n"
        "b = TopologyBuilder('plain')\n"
        "b.source('in', type='order.placed', version=2)"
        ".to(owned('out'), type='order.placed', version=2)\n"
        "topology = b.build()\n"
    )
    t = load_topology(f, app_id="other")
    assert (t.app_id, t.topics_written) == ("other", ["other-out"])


def test_an_app_id_that_cannot_name_topics_is_refused_on_load() -> None:
    with pytest.raises(TopologyError, match="may only use letters"):
        load_topology(ROOT / "topology" / "orders.py", app_id="my shop")
