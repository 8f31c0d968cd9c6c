"""`make demo` is the tour of what works: it must keep working as steps are added."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

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
    # A step's line is wrapped at the terminal's width, where its figures put the breaks:
    # read the output as one line of words.
    out = " ".join(result.stdout.split())
    assert "1. broker: using KAFKA_BOOTSTRAP_SERVERS" in out
    assert "produced 500/500" in out
    assert "2 envelopes decoded (o-1, o-2), 1 garbage" in out
    assert "wrote 30 shipment.requested, 30 following their order" in out
    assert "/metrics counted 201 consumed" in out
    assert "1 dead-lettered, lag 0 on both partitions" in out
    # The failures step lists what one run with retries makes, each name with the app id once.
    made = re.search(
        r"topics of app (demo-\w+-pay) \(its input \S+ aside\): (.*?) (\d+) topics", out
    )
    assert made is not None
    app, listed = made[1], made[2]
    for suffix in ("payments-retry-1", "payments-retry-2", "payments-dlq", "settled"):
        assert f"{app}-{suffix} 2 partitions" in listed
    assert f"{made[3]} topics, {2 * int(made[3])} partitions" in out
    assert re.search(r"(demo-[0-9a-f]{8}-[\w-]+?)-\1-", out) is None  # no <app>-<app>-
    assert re.search(
        r"the history of c-7 made an output over message.max.bytes: its order to "
        r"demo-\w+-history-orders-dlq \(OutputRefusedError, step with-history\), the 19 others"
        r" out, the instance on; .* \d+ outputs written twice, with the same envelope ids",
        out,
    )
    assert re.search(
        r"--through topology/profiles.py --execute`: its table read first \(12 profile "
        r"records\), then the 16 orders, all 16 outputs acknowledged, each with today's",
        out,
    )
    assert "o-7 came out (its dedup id had been undone with its output; 0 duplicates)" in out
    assert re.search(r"/readyz 503 \(stalled partition\(s\): demo-\w+-stalled\[0\]\)", out)
    assert re.search(
        r"400 events \(each id twice\) -> 200 outputs, each once, readable to read_committed"
        r" readers [\d.]+ s after the start \(commit interval 30 s",
        out,
    )
    assert re.search(r"-> \d+ closed windows, each once, as computed by hand", out)
    assert "3 late orders to revenue-late-orders" in out
    assert "90 payments joined with their orders within the hour of event time -> 72" in (out)
    assert re.search(r"302 orders over 5 minutes of event time -> \d+ digests", out)
    assert "digests by a timer at each minute of event time; every order in exactly one" in (out)
    assert "1 deleted -> the next 8 orders: 3 silver, 4 gold, 1 unknown" in out
    assert "300 quote requests in flight at once, each answered with its own price" in (out)
    assert "an unknown sku answered at once by an error reply (UnknownSku)" in out
    assert "1000 events of 30 accounts folded into balances; each account asked for" in (out)
    assert "all equal to the fold by hand" in out
    assert re.search(
        r"297 shipments booked once each \(the workers took [1-9]\d* and [1-9]\d* deliveries",
        out,
    )
    assert "3 no carrier serves dead-lettered after 3 deliveries" in out
    assert re.search(r"\d+ orders/s one at a time; [\d,]+ orders/s with 64 in flight", out)
    assert "3000 orders once each, every customer's in the order they came" in out
    assert re.search(r"3 nodes up in [\d.]+ s; the app's \d+ topics \(.*\) have 3 replicas", out)
    assert re.search(r"node [123] killed mid-stream: 2,000 orders in, 2,000 out, none lost", out)
    assert "demo done" in out
    # The tour prints its own lines; its instances' log lines (a killed node's warnings)
    # go to the file it names.
    for line in (result.stdout + result.stderr).splitlines():
        assert not re.match(r'\s*\{".*"event": ', line), f"a log line in the tour: {line}"
    logs = re.search(r"logs of the tour's instances \(\d+ lines?\): (\S+\.log)", out)
    if logs is not None:
        assert Path(logs[1]).stat().st_size > 0
        Path(logs[1]).unlink()
    # Every topic of the run is gone: the inputs, and what its apps made (DLQs, changelogs).
    run_id = re.search(r"demo-([0-9a-f]{8})-", out)
    assert run_id is not None
    left = [t for t in kafka_admin.list_topics(timeout=30).topics if run_id[1] in t]
    assert left == []
