"""``streams run --json``: JSON log lines, and one JSON summary line at a clean stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from streams.codec import AvroCodec
from streams.schemas import default_catalog
from streams.testing import TopicFactory, TopicReader, produce_envelopes, wait_until
from streams.testing.topics import unique_topic_name
from streams.topology.loader import import_file

ORDERS = Path(__file__).resolve().parents[2] / "topology" / "orders.py"


def test_run_json_logs_as_json_and_sums_up_on_stdout(
    kafka_bootstrap: str, make_topic: TopicFactory
) -> None:
    source = make_topic("run-json-orders", partitions=2)
    app_id = unique_topic_name("runjson")
    orders = list(import_file(ORDERS).sample_orders(40))
    produce_envelopes(kafka_bootstrap, source, orders, AvroCodec(default_catalog()))
    cmd = [sys.executable, "-m", "streams", "run", str(ORDERS), "--app-id", app_id,
           "--set", f"input={source}", "-b", kafka_bootstrap, "--json"]  # fmt: skip
    run = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    readers = [TopicReader(kafka_bootstrap, f"{app_id}-{s}") for s in ("accepted", "rejected")]
    try:

        def routed() -> bool:
            for r in readers:
                r.poll(0.2)
            return sum(len(r.records) for r in readers) >= len(orders)

        wait_until(routed, 120, what="every order routed")
        run.send_signal(signal.SIGTERM)
        out, err = run.communicate(timeout=60)
    finally:
        for r in readers:
            r.close()
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    assert run.returncode == 0, err
    (line,) = out.splitlines()
    summary = json.loads(line)
    assert summary["app_id"] == app_id
    assert summary["consumed"] == len(orders)
    assert summary["produced"] == len(orders)
    assert summary["seconds"] > 0
    logs = [json.loads(text) for text in err.splitlines() if text.startswith("{")]
    assert any(entry.get("event") == "started" for entry in logs)
    # nothing on stderr but JSON lines and the signal handler's own notice
    assert all(text.startswith("{") or "SIGTERM" in text for text in err.splitlines() if text)
