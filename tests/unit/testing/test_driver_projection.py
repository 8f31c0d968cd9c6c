"""An event-sourced projection in the TestDriver: ``topology/accounts.py`` folds one topic
of three event types into a table, read whole and key by key as queries read it."""

from __future__ import annotations

import pytest

from streams.envelope import Envelope
from streams.examples import example_path
from streams.failures.headers import parse_failure_headers
from streams.runtime.query import UnknownTableError
from streams.testing import TestDriver
from streams.topology import TopologyBuilder, TopologyError, load_topology, tumbling
from streams.topology.loader import import_file

ACCOUNTS = import_file(example_path("accounts"))


def accounts_driver(fee_cents: int = 0) -> TestDriver:
    params = {"input": "accounts", "fee_cents": str(fee_cents)}
    return TestDriver(load_topology(example_path("accounts"), params=params), partitions=4)


@pytest.mark.parametrize("fee_cents", [0, 25])
def test_the_projection_is_the_fold_of_each_accounts_events(fee_cents: int) -> None:
    events = list(ACCOUNTS.sample_events(600, accounts=30))
    with accounts_driver(fee_cents) as d:
        d.pipe("accounts", events)
        expected = ACCOUNTS.replayed(events, fee_cents)
        assert d.table("balances") == expected
        for key, balance in expected.items():
            assert d.query("balances", key) == balance
        assert d.query("balances", "a-never") is None


def test_a_source_of_several_types_sends_any_other_type_to_the_dlq() -> None:
    with accounts_driver() as d:
        opened = Envelope.new(
            "account.opened", {"account_id": "a-1", "owner": "o", "currency": "EUR"}, key="a-1"
        )
        stray = Envelope.new("quote.requested", {"sku": "tea", "quantity": 1, "customer_id": "c"})
        d.pipe("accounts", [opened, stray])
        (dead,) = d.dead_letters
        info = parse_failure_headers(dead.headers)
        assert info.error_type == "UnexpectedTypeError"
        assert "reads account.opened@1, account.deposited@1, account.withdrawn@1" in info.message
        assert d.query("balances", "a-1")["owner"] == "o"


def test_a_query_names_the_tables_there_are() -> None:
    b = TopologyBuilder("counts")
    orders = b.source("orders", type="order.placed", version=2)
    orders.window(tumbling(60)).count(name="per-minute").to_stream(lambda u: None).to(
        "out", type="order.placed", version=2
    )
    orders.group_by_key().count(name="all-time")
    with TestDriver(b.build()) as d:
        (order,) = import_file(example_path("orders")).sample_orders(1)
        d.pipe("orders", order)
        tables = r"\(tables: \['per-minute', 'all-time'\]\)"
        with pytest.raises(UnknownTableError, match=f"no table 'nope' {tables}"):
            d.query("nope", "k")
        assert d.query("per-minute", "k") == []  # a windowed table: the key's windows
        assert [count for _window, count in d.query("per-minute", order.key or "")] == [1]
        assert d.query("all-time", "k") is None
        assert d.query("all-time", order.key or "") == 1


def test_a_source_takes_type_and_version_or_types() -> None:
    b = TopologyBuilder("x")
    with pytest.raises(TopologyError, match="give type= and version=, or types="):
        b.source("t", type="account.opened")
    with pytest.raises(TopologyError, match="give type= and version=, or types="):
        b.source("t", type="account.opened", version=1, types={"account.deposited": 1})
