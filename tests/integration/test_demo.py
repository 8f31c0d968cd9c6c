"""`make demo` is the tour of what works: it must keep working as steps are added."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from confluent_kafka.admin import AdminClient


def test_the_demo_runs_every_step(kafka_bootstrap: str, kafka_admin: AdminClient) -> None:
    env = {
        **os.environ,
        "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
        "COLUMNS": "200",
        "PYTHONFAULTHANDLER": "1",  # a native crash prints the Python stack
    }
    result = subprocess.run(
        [sys.executable, "-m", "streams", "demo"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1. broker: using KAFKA_BOOTSTRAP_SERVERS" in result.stdout
    assert "produced 500/500" in result.stdout
    assert "2 envelopes decoded (o-1, o-2), 1 garbage" in result.stdout
    assert "wrote 30 shipment.requested, 30 following their order" in result.stdout
    assert "/metrics counted 201 consumed" in result.stdout
    assert "1 dead-lettered, lag 0 on both partitions" in result.stdout
    assert re.search(
        r"/readyz 503 \(stalled partition\(s\): demo-\w+-stalled\[0\]\)", result.stdout
    )
    assert re.search(r"-> \d+ closed windows, each once, as computed by hand", result.stdout)
    assert "3 late orders to revenue-late-orders" in result.stdout
    assert "90 payments joined with their orders within the hour of event time -> 72" in (
        result.stdout
    )
    assert re.search(r"302 orders over 5 minutes of event time -> \d+ digests", result.stdout)
    assert "digests by a timer at each minute of event time; every order in exactly one" in (
        result.stdout
    )
    assert "1 deleted -> the next 8 orders: 3 silver, 4 gold, 1 unknown" in result.stdout
    assert "300 quote requests in flight at once, each answered with its own price" in (
        result.stdout
    )
    assert "an unknown sku answered at once by an error reply (UnknownSku)" in result.stdout
    assert "1000 events of 30 accounts folded into balances; each account asked for" in (
        result.stdout
    )
    assert "all equal to the fold by hand" in result.stdout
    assert re.search(
        r"297 shipments booked once each \(the workers took [1-9]\d* and [1-9]\d* deliveries",
        result.stdout.replace("\n", " "),
    )
    assert "3 no carrier serves dead-lettered after 3 deliveries" in result.stdout.replace(
        "\n", " "
    )
    assert "demo done" in result.stdout
    # Every topic of the run is gone: the inputs, and what its apps made (DLQs, changelogs).
    run_id = re.search(r"demo-([0-9a-f]{8})-", result.stdout)
    assert run_id is not None
    left = [t for t in kafka_admin.list_topics(timeout=30).topics if run_id[1] in t]
    assert left == []
