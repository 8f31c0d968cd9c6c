"""The metrics port without a broker: health answers, clear errors, and the compose
profile's Prometheus and Grafana files agreeing with what the endpoint exports."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families

import streams.observability
from streams.coordinates import TP
from streams.observability.health import Health
from streams.observability.metrics import RuntimeMetrics
from streams.observability.server import InstanceServer, InstanceServerError, load_metrics
from streams.pipeline.stats import Stats
from streams.testing.metrics import get

ROOT = Path(__file__).resolve().parents[3]
COMPOSE = ROOT / "compose"
OBSERVABILITY = COMPOSE / "observability"


class FakeRuntime:
    """What the metrics read of a runtime, set by hand."""

    def __init__(self) -> None:
        self.stats = Stats(partitions=2, rebalances=1, partitions_lost=1, refusals=4)
        self.stats.failures = {"dead_lettered_by_topic": {"orders": 3}, "recovered": 1}
        self.health = Health()
        self.state = None
        self.committer = SimpleNamespace(aborts=2)  # read through any wrapper
        self.duplicates = 5
        self.in_flight = 0
        self.held = 0
        self.stall = SimpleNamespace(stalled_partitions=list)  # no partition stalled

    def outstanding_writes(self) -> int:
        return 0

    def partition_lag(self) -> dict[TP, int] | None:
        return {("orders", 0): 7}


@pytest.fixture
def served() -> Iterator[tuple[FakeRuntime, RuntimeMetrics, int]]:
    runtime = FakeRuntime()
    metrics = RuntimeMetrics("billing", "instance-1")
    metrics.watch(runtime)  # type: ignore[arg-type]
    server = InstanceServer(0, runtime.health, exposition=metrics.exposition).start()
    try:
        yield runtime, metrics, server.port
    finally:
        server.stop()


def test_healthz_and_readyz_follow_the_runtime_and_registered_checks(
    served: tuple[FakeRuntime, RuntimeMetrics, int],
) -> None:
    runtime, _metrics, port = served
    health = runtime.health
    assert get(port, "/healthz") == (503, "not running\n")
    health.running = True
    assert get(port, "/healthz") == (200, "ok\n")
    assert get(port, "/readyz") == (503, "waiting for a partition assignment\n")
    health.assigned = health.restoring = True
    assert get(port, "/readyz") == (503, "restoring stores\n")
    health.restoring = False

    class Stalled:
        stalled: str | None = "partition orders[1] stalled for 61 s"

        def unready(self) -> str | None:
            return self.stalled

    check = Stalled()
    health.register(check)
    assert get(port, "/readyz") == (503, "partition orders[1] stalled for 61 s\n")
    check.stalled = None
    assert get(port, "/readyz") == (200, "ready\n")
    assert get(port, "/nothing")[0] == 404


def scraped(port: int) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    status, body = get(port, "/metrics")
    assert status == 200
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(body)
        for sample in family.samples
    }


def key(name: str, **labels: str) -> tuple[str, frozenset[tuple[str, str]]]:
    return name, frozenset({"app_id": "billing", "instance_id": "instance-1", **labels}.items())


def test_metrics_are_read_from_the_runtime_at_scrape_time(
    served: tuple[FakeRuntime, RuntimeMetrics, int],
) -> None:
    runtime, metrics, port = served
    metrics.consumed["orders"] = 10
    metrics.lag = {("orders", 0): (7, 2.5)}
    samples = scraped(port)
    assert samples[key("streams_records_consumed_total", topic="orders")] == 10
    assert samples[key("streams_records_dead_lettered_total", topic="orders")] == 3
    assert samples[key("streams_records_recovered_total")] == 1
    assert samples[key("streams_records_duplicates_total")] == 5
    assert samples[key("streams_transaction_aborts_total")] == 2
    assert samples[key("streams_rebalances_total")] == 1
    assert samples[key("streams_partitions_lost_total")] == 1
    assert samples[key("streams_refusals_total")] == 4
    assert samples[key("streams_consumer_lag_records", topic="orders", partition="0")] == 7
    assert samples[key("streams_consumer_lag_seconds", topic="orders", partition="0")] == 2.5
    assert samples[key("streams_assigned_partitions")] == 2
    assert samples[key("streams_ready")] == 0
    metrics.consumed["orders"] = 11  # counted by the record path: the next scrape sees it
    runtime.health.running = runtime.health.assigned = True
    samples = scraped(port)
    assert samples[key("streams_records_consumed_total", topic="orders")] == 11
    assert samples[key("streams_ready")] == 1


def test_a_taken_port_is_one_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = InstanceServer(port, Health(), exposition=lambda: (b"", "text/plain"))
        with pytest.raises(InstanceServerError, match=f"cannot serve on port {port}"):
            server.start()


def test_without_prometheus_client_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "streams.observability.metrics")
    monkeypatch.delattr(streams.observability, "metrics")
    with pytest.raises(InstanceServerError) as raised:
        load_metrics()
    assert str(raised.value) == (
        "--metrics-port needs the package prometheus_client: pip install 'streams[metrics]'"
    )


def _exported_names() -> set[str]:
    """Every sample name the endpoint can export (counters' _total, histograms' parts)."""
    metrics = RuntimeMetrics("app")
    metrics.watch(FakeRuntime())  # type: ignore[arg-type]
    body = metrics.exposition()[0].decode()
    names: set[str] = set()
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", body, re.MULTILINE):
        parts = {"histogram": ["_bucket", "_count", "_sum"]}.get(kind, [""])  # counters: _total
        names.update(name + part for part in parts)
    return names


def test_the_dashboard_queries_only_metrics_the_endpoint_exports() -> None:
    dashboard = json.loads((OBSERVABILITY / "grafana/dashboards/streams.json").read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    used = {name for expr in exprs for name in re.findall(r"\bstreams_\w+", expr)}
    assert used, "the dashboard queries nothing"
    assert used - _exported_names() == set()
    datasource = (OBSERVABILITY / "grafana/provisioning/datasources/prometheus.yml").read_text()
    uids = {t["datasource"]["uid"] for panel in dashboard["panels"] for t in panel["targets"]}
    assert uids == {"streams-prometheus"}
    assert "uid: streams-prometheus" in datasource


def test_prometheus_scrapes_the_port_the_stack_topology_serves() -> None:
    compose = (COMPOSE / "compose.yaml").read_text()
    port = re.search(r'STREAMS_METRICS_PORT: "(\d+)"', compose)
    assert port is not None
    scrape = (OBSERVABILITY / "prometheus.yml").read_text()
    assert f'targets: ["topology:{port.group(1)}"]' in scrape


def _compose_cli() -> list[str] | None:
    docker = shutil.which("docker")
    if docker:
        plugin = subprocess.run([docker, "compose", "version"], capture_output=True, check=False)
        if plugin.returncode == 0:
            return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


def test_the_observability_profile_is_a_valid_compose_file() -> None:
    cli = _compose_cli()
    if cli is None:
        if os.environ.get("CI"):
            pytest.fail("CI has no compose CLI: the observability profile is not validated")
        pytest.skip("neither `docker compose` nor `docker-compose` is installed")
    env = {**os.environ, "COMPOSE_PROFILES": "observability"}
    result = subprocess.run(
        ["bash", str(COMPOSE / "stack.sh"), "config", "--services"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert {"kafka", "topology", "prometheus", "grafana"} <= set(result.stdout.split())
    resolved = subprocess.run(
        ["bash", str(COMPOSE / "stack.sh"), "config"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    for mounted in ("observability/prometheus.yml", "observability/grafana/dashboards"):
        assert f"{COMPOSE / mounted}:" in resolved  # every mounted file is in the repo
        assert (COMPOSE / mounted).exists()
