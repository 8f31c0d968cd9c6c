"""``topology/largest.py`` in the TestDriver, the worked example of ``emit="final"``: an
order out of order inside the grace still counts, a window's final value is written once,
and an order overtaken across input partitions after the rekey is late, set aside."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import factories

from streams.envelope import Envelope
from streams.examples import example_path
from streams.testing import TestDriver
from streams.topology import load_topology

NOON = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def order(number: int, second: int, cents: int, customer: str = "c-1") -> Envelope:
    """Keyed by the order (the topology rekeys by customer)."""
    when = NOON + timedelta(seconds=second)
    return factories.order(number, customer, key=f"o-{number}", total_cents=cents, time=when)


def largest_driver() -> TestDriver:
    topology = load_topology(example_path("largest"), app_id="app", params={"grace": "30"})
    return TestDriver(topology, partitions=2)


def test_a_windows_largest_order_is_written_once_and_an_overtaken_order_is_late() -> None:
    with largest_driver() as d:
        # Input partition 1 is read ahead: its orders reach the aggregation first.
        d.pipe("orders", [order(1, 10, 500), order(2, 65, 100)], partition=1)
        d.pipe("orders", order(3, 40, 900), partition=1)  # out of order, inside the grace
        assert d.records("app-largest") == []  # 12:01:05 + grace: nothing closed yet
        d.pipe(
            "orders", order(4, 95, 200), partition=1
        )  # stream time 12:01:35: [12:00, 12:01) closes
        d.pipe("orders", order(5, 100, 300), partition=1)  # no second final value
        # Input partition 0 was behind: its 12:00:50 order comes after the window closed.
        d.pipe("orders", order(6, 50, 9_999), partition=0)
        (final,) = d.records("app-largest")
        assert (final.key, final.envelope.data["order_id"]) == (b"c-1", "o-3")
        (late,) = d.records("app-late-orders")
        assert late.envelope.data["order_id"] == "o-6"  # set aside, not counted, not dropped
        ((window, still_open),) = d.query("largest", "c-1")  # the next minute, open
        assert (window.start, still_open["order_id"]) == (NOON + timedelta(minutes=1), "o-5")
