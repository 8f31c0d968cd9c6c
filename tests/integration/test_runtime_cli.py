"""`streams run` as users start it: several instances from one command, clear errors."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

from cli_runner import streams
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from streams.codec import AvroCodec
from streams.runtime.signals import STACK_DUMP
from streams.schemas import default_catalog
from streams.testing import TopicFactory, TopicReader, produce_envelopes, wait_until
from streams.testing.topics import unique_topic_name
from streams.topology.loader import import_file

ORDERS = Path(__file__).resolve().parents[2] / "topology" / "orders.py"


def streams_run(*args: str) -> list[str]:
    return [sys.executable, "-m", "streams", "run", str(ORDERS), "--no-status", *args]


def test_instances_share_one_group_dump_stacks_and_stop_together_on_sigterm(
    kafka_bootstrap: str, kafka_admin: AdminClient, make_topic: TopicFactory, tmp_path: Path
) -> None:
    source = make_topic("cli-orders", partitions=4)
    app_id = unique_topic_name("cli")
    codec = AvroCodec(default_catalog())
    orders = list(import_file(ORDERS).sample_orders(200))
    produce_envelopes(kafka_bootstrap, source, orders, codec)
    cmd = streams_run("--app-id", app_id, "--set", f"input={source}", "-b", kafka_bootstrap)
    # its own process group, so a failing test can stop the instances with their parent
    err = tmp_path / "stderr.txt"
    with open(err, "wb") as out:  # the children write to the parent's stderr
        parent = subprocess.Popen([*cmd, "--instances", "2"], start_new_session=True, stderr=out)
    try:

        def members() -> int:
            try:
                group = kafka_admin.describe_consumer_groups([app_id])[app_id].result(timeout=10)
            except KafkaException:  # e.g. NOT_COORDINATOR while a fresh broker sets up groups
                return -1
            return len(group.members)

        wait_until(lambda: members() == 2, 120, what="two members in the group")
        readers = [TopicReader(kafka_bootstrap, f"{app_id}-{s}") for s in ("accepted", "rejected")]
        try:

            def routed() -> bool:
                for r in readers:
                    r.poll(0.2)
                return sum(len(r.records) for r in readers) >= len(orders)

            wait_until(routed, 120, what="every order routed")
            seen = [
                codec.decode(m.value(), cast(Any, m.headers())).data["order_id"]
                for r in readers
                for m in r.records
            ]
        finally:
            for r in readers:
                r.close()
        assert sorted(set(seen)) == sorted(o.data["order_id"] for o in orders)
        # SIGUSR1 reaches each instance: each prints its threads' stacks and runs on
        parent.send_signal(STACK_DUMP)
        wait_until(lambda: err.read_text().count("Current thread") == 2, 30, what="two stack dumps")
        assert members() == 2
        parent.send_signal(signal.SIGTERM)
        assert parent.wait(60) == 0
        wait_until(lambda: members() == 0, 30, what="the group to be empty")
    except Exception:
        print(err.read_text()[-6000:])  # the instances' logs
        raise
    finally:
        if parent.poll() is None:
            os.killpg(parent.pid, signal.SIGKILL)
            parent.wait()


def test_a_missing_source_topic_is_one_line_on_stderr_and_exit_1(kafka_bootstrap: str) -> None:
    missing = unique_topic_name("missing")
    result = streams("run", str(ORDERS), "--no-status", "--set", f"input={missing}",
                     bootstrap=kafka_bootstrap)  # fmt: skip
    assert result.returncode == 1
    err = result.stderr
    assert f"reads topic '{missing}', which does not exist" in err
    assert "Traceback" not in err


def test_a_refused_start_creates_no_topic(
    kafka_bootstrap: str, kafka_admin: AdminClient, make_topic: TopicFactory
) -> None:
    source = make_topic("cli-orders", partitions=2)
    app_id = unique_topic_name("refused")
    cmd = ["run", str(ORDERS), "--no-status", "--app-id", app_id, "--set", f"input={source}"]

    def created() -> list[str]:
        return [t for t in kafka_admin.list_topics(timeout=10).topics if t.startswith(app_id)]

    bad_guarantee = streams(*cmd, "--guarantee", "exactly-once", bootstrap=kafka_bootstrap)
    assert bad_guarantee.returncode != 0
    assert "exactly-once" in bad_guarantee.stderr
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        port_taken = streams(*cmd, "--metrics-port", str(port), bootstrap=kafka_bootstrap)
    assert port_taken.returncode == 1
    assert f"cannot serve on port {port}" in port_taken.stderr
    no_token = {name: None for name in os.environ if name.startswith("STREAMS_HTTP_TOKEN")}
    open_to_all = streams(
        *cmd, "--metrics-port", "0", "--query-port", "0", "--http-host", "0.0.0.0",
        env=no_token, bootstrap=kafka_bootstrap,
    )  # fmt: skip
    assert open_to_all.returncode == 1
    assert open_to_all.stderr.startswith(
        "error: refusing to serve the metrics and query ports on 0.0.0.0 without a token"
    )
    assert created() == []  # no output, retry tier, DLQ or changelog left behind
