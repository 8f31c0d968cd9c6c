"""Windowed tables read key by key (``Runtime.query``, the query port): a key's open windows,
oldest start first, bounded by window start; the same windows ``TestDriver.table`` shows."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any
from urllib.error import HTTPError
from urllib.request import urlopen

import pytest

from streams.codec import AvroCodec
from streams.pipeline.stats import Stats
from streams.runtime import Runtime, RuntimeConfig
from streams.runtime.query import QueryError
from streams.runtime.state import IN_MEMORY
from streams.schemas import default_catalog
from streams.testing import TestDriver
from streams.testing.memory import MemoryCluster
from streams.testing.memory.admin import MemoryClients
from streams.topology import (
    Topology,
    TopologyBuilder,
    Window,
    hopping,
    owned,
    session,
    sliding,
    tumbling,
)
from streams.topology.windows import AnyWindows
from tests.unit.testing.test_driver_windows import (
    BASE,
    BASE_MS,
    T,
    V,
    order,
    shuffled_input,
    windowed,
)


def counts(windows: AnyWindows) -> Topology:
    """``in`` counted per key in ``windows`` (table ``counts``), and for all time (``all``)."""
    b = TopologyBuilder("app")
    orders = b.source("in", type=T, version=V)
    windowed = orders.window(windows).count(name="counts")
    windowed.to_stream(lambda _update: None).to(owned("out"), type=T, version=V)
    orders.group_by_key().count(name="all")
    return b.build(default_catalog())


@pytest.mark.parametrize(
    "windows",
    [tumbling(20, grace=5), hopping(30, 10, grace=5), session(6, grace=5), sliding(20, grace=5)],
    ids=str,
)
def test_a_query_reads_the_keys_windows_as_the_table_holds_them(windows: AnyWindows) -> None:
    with TestDriver(windowed(windows, late=True), partitions=3) as d:
        for key, second in shuffled_input(200, seed=7):
            d.pipe("in", order(key, second))
        table = d.table("counts")
        for key in "abc":
            found = d.query("counts", key)
            assert found == sorted(
                ((w, v) for (k, w), v in table.items() if k == key), key=lambda wv: wv[0].start_ms
            )
            assert found  # a key's windows still open at the end
        assert d.query("counts", "never") == []


def test_window_starts_bound_what_a_query_reads() -> None:
    with TestDriver(counts(hopping(30, 10, grace=60))) as d:
        d.pipe("in", [order("a", 25), order("a", 41), order("b", 41)])
        second = timedelta(seconds=1)
        starts = [(w.start_ms - BASE_MS) // 1000 for w, _ in d.query("counts", "a")]
        assert starts == [0, 10, 20, 30, 40]  # hopping: 25 s is in three, 41 s in three
        values = [v for _, v in d.query("counts", "a")]
        assert values == [1, 1, 2, 1, 1]
        within = d.query("counts", "a", start_from=BASE + 10 * second, start_to=BASE + 30 * second)
        assert within == [
            (Window(BASE_MS + 10_000, BASE_MS + 40_000), 1),
            (Window(BASE_MS + 20_000, BASE_MS + 50_000), 2),
            (Window(BASE_MS + 30_000, BASE_MS + 60_000), 1),
        ]
        assert [v for _, v in d.query("counts", "a", start_from=BASE + 35 * second)] == [1]
        assert d.query("counts", "a", start_to=BASE - second) == []
        assert d.query("all", "a") == 2  # a table without windows: its value
        with pytest.raises(QueryError, match="'all' has no windows"):
            d.query("all", "a", start_from=BASE)


def get(port: int | None, path: str) -> tuple[int, Any]:
    try:
        with urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, json.loads(response.read())
    except HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_query_port_answers_a_keys_windows_as_json() -> None:
    cluster = MemoryCluster()
    cluster.create_topic("in", 1)
    codec = AvroCodec(default_catalog())
    producer = cluster.producer({})
    for key, second in [("a", 5), ("a", 61), ("a", 62), ("b", 70)]:
        value, headers = codec.encode(order(key, second))
        producer.produce("in", value, key.encode(), 0, headers=headers)
    answers: dict[str, tuple[int, Any]] = {}

    def asked(stats: Stats) -> None:
        if stats.consumed < 4:
            return
        port = runtime.query_port
        answers["all"] = get(port, "/stores/counts/a")
        answers["bounded"] = get(port, "/stores/counts/a?from=2026-01-01T00:01:00Z")
        answers["none"] = get(port, "/stores/counts/nobody")
        answers["bad"] = get(port, "/stores/counts/a?from=yesterday")
        answers["out of range"] = get(port, "/stores/counts/a?from=@99999999999999999999")
        answers["no windows"] = get(port, "/stores/all/a?to=@0")
        runtime.stop()

    config = RuntimeConfig(
        "memory",
        poll_timeout_s=0,
        status_interval_s=0,
        commit_interval_s=0,
        state_dir=IN_MEMORY,
        shutdown_timeout_s=0,
        query_port=0,
    )
    topology = counts(tumbling(60, grace=600))
    runtime = Runtime(topology, config, codec=codec, clients=MemoryClients(cluster), on_tick=asked)
    runtime.run()
    minute = {"start": "2026-01-01T00:01:00.000Z", "end": "2026-01-01T00:02:00.000Z", "value": 2}
    first = {"start": "2026-01-01T00:00:00.000Z", "end": "2026-01-01T00:01:00.000Z", "value": 1}
    assert answers["all"] == (200, {"table": "counts", "key": "a", "windows": [first, minute]})
    assert answers["bounded"] == (200, {"table": "counts", "key": "a", "windows": [minute]})
    assert answers["none"] == (200, {"table": "counts", "key": "nobody", "windows": []})
    status, body = answers["bad"]
    assert status == 400 and "not a time: 'yesterday'" in body["error"]
    status, body = answers["out of range"]
    assert status == 400 and "is after 9999-12-31T23:59:59.999Z" in body["error"]
    status, body = answers["no windows"]
    assert status == 400 and "'all' has no windows" in body["error"]
