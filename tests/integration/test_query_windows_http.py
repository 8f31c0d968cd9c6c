"""A windowed table read key by key on a real broker: ``topology/revenue.py`` (a tumbling
window per customer) run with a query port, and ``streams query`` asking it over HTTP for
each customer's windows, bounded by window start."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import factories
from cli_runner import streams

from streams.cluster import Cluster
from streams.envelope import Envelope
from streams.examples import example_path
from streams.patterns.projections import caught_up
from streams.testing import KafkaIO, TopicFactory, TopologyProcess, wait_until
from streams.topology import load_topology

REVENUE = example_path("revenue")
MINUTE = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)  # every order in one minute: none closes


def order(customer: str, n: int, cents: int) -> Envelope:
    when = MINUTE + timedelta(seconds=n)
    return factories.order(f"o-{customer}-{n}", customer, total_cents=cents, time=when)


def test_streams_query_shows_a_customers_open_windows(
    kafka_bootstrap: str, app_id: str, kafka_io: KafkaIO, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=3)
    customers = [f"c-{i}" for i in range(6)]
    sent = [order(c, n, 100 * (i + 1)) for n in range(5) for i, c in enumerate(customers)]
    kafka_io.produce(topic, sent)
    settings = {"input": topic}
    topology = load_topology(REVENUE, app_id=app_id, params=settings)
    cluster = Cluster(kafka_bootstrap, 10)
    with TopologyProcess(
        REVENUE, kafka_bootstrap, app_id=app_id, settings=settings, args=["--query-port", "0"]
    ) as proc:
        proc.wait_started(assigned=True)
        wait_until(lambda: caught_up(cluster, topology), timeout=120, what="the revenue table")
        start, end = "2026-03-01T12:00:00.000Z", "2026-03-01T12:01:00.000Z"
        for i, customer in enumerate(customers):
            shown = streams(
                "query", app_id, "revenue", customer, "--json", bootstrap=kafka_bootstrap
            )
            assert shown.returncode == 0, shown.stderr
            (window,) = json.loads(shown.stdout)["windows"]
            assert (window["start"], window["end"]) == (start, end)
            assert window["value"]["orders"] == 5
            assert window["value"]["revenue_cents"] == 5 * 100 * (i + 1)
        line = streams(
            "query", app_id, "revenue", customers[0], "--to", start, bootstrap=kafka_bootstrap
        )
        assert line.returncode == 0, line.stderr
        first, last, value = line.stdout.strip().split("  ")
        assert (first, last, json.loads(value)["orders"]) == (start, end, 5)
        later = streams(
            "query",
            app_id,
            "revenue",
            customers[0],
            "--from",
            "@1772366460000",
            bootstrap=kafka_bootstrap,
        )
        assert later.returncode == 1  # no window starts at 12:01 or after
        assert later.stderr.strip().endswith(f"revenue of {app_id} has no window for 'c-0'")
        refused = streams(
            "query", app_id, "revenue", "c-0", "--from", "noon", bootstrap=kafka_bootstrap
        )
        assert refused.returncode != 0 and "--from" in refused.stderr
