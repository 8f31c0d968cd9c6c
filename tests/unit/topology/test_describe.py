"""`Topology.describe()` and `streams describe`: the shape and the topics, as text or Mermaid."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from streams.cli import app
from streams.topology import load_topology
from streams.topology.describe import describe_data

ORDERS = Path(__file__).resolve().parents[3] / "topology" / "orders.py"


def test_text_lists_nodes_links_and_topics() -> None:
    text = load_topology(ORDERS).describe()
    assert "Source: orders (topic: orders, reads order.placed@2)" in text
    assert "--> [accepted] to_accepted" in text
    assert "<-- route:rejected" in text
    assert "Sink: sink-accepted (topic: orders-accepted, writes order.accepted@1)" in text
    assert "read:    orders\n" in text
    assert "written: orders-accepted, orders-rejected\n" in text
    assert "owned:   orders-accepted (output), orders-rejected (output)\n" in text


def test_mermaid_is_a_flowchart_with_topics_and_labelled_branches() -> None:
    chart = load_topology(ORDERS).describe("mermaid")
    assert chart.startswith("flowchart LR\n")
    assert 't_orders[("orders")]' in chart
    assert 't_orders_accepted[("orders-accepted (owned)")]' in chart
    assert "n_route -->|accepted| n_to_accepted" in chart
    assert "n_sink_rejected --> t_orders_rejected" in chart


def test_cli_describe_text_and_mermaid() -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["describe", str(ORDERS), "--app-id", "shop"])
    assert result.exit_code == 0, result.output
    assert "written: shop-accepted, shop-rejected" in result.output
    result = runner.invoke(app, ["describe", str(ORDERS), "--format", "mermaid"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("flowchart LR")


def test_cli_describe_of_a_broken_file_fails_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("x = 1\n")
    result = CliRunner().invoke(app, ["describe", str(bad)])
    assert result.exit_code != 0
    assert "exposes no topology" in str(result.exception)


def test_cli_run_and_describe_refuse_a_malformed_set() -> None:
    for command in ("run", "describe"):
        result = CliRunner().invoke(app, [command, str(ORDERS), "--set", "a=1", "-s", "oops"])
        assert result.exit_code != 0
        assert str(result.exception) == "--set item 2: expected KEY=VALUE, found no '='"


def test_async_steps_and_the_concurrency_they_run_with_are_shown() -> None:
    lookup = ORDERS.with_name("lookup.py")
    text = load_topology(lookup).describe()
    assert "Processor: enrich (async map, build.<locals>.enrich)" in text
    assert text.endswith("Concurrency: up to 64 records in flight, one at a time per key\n")
    one = load_topology(lookup, params={"concurrency": "1"}).describe()
    assert one.endswith("Concurrency: 1 record at a time (async steps awaited one by one)\n")
    assert "Concurrency" not in load_topology(ORDERS).describe()
    data = describe_data(load_topology(lookup))
    assert (data["concurrency"], data["ordering"]) == (64, "key")
    enrich = next(node for node in data["nodes"] if node["name"] == "enrich")
    assert (enrich["async"], enrich["concurrency"]) == (True, None)
