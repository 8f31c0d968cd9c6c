"""`make demo` is the tour of what works: it must keep working as steps are added."""

from __future__ import annotations

import os
import subprocess
import sys


def test_the_demo_runs_every_step(kafka_bootstrap: str) -> None:
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
    assert "demo done" in result.stdout
