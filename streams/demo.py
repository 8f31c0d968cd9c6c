"""The tour behind ``make demo``: each finished capability adds a step here.

The demo runs against ``KAFKA_BOOTSTRAP_SERVERS`` when set, else the local broker on the
default port (started if needed and left running, so you can look around afterwards).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import Consumer, Producer
from rich.console import Console

from streams.admin import admin_client, create_topic, delete_topics
from streams.broker import LocalBroker
from streams.codec.tour import step_schemas
from streams.config import external_bootstrap
from streams.failures.tour import step_failures
from streams.replay.tour import step_replay
from streams.runtime.tour import step_topology
from streams.state.tour import step_state
from streams.testing.tour import step_testing


@dataclass
class DemoContext:
    bootstrap: str
    console: Console
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    topics: list[str] = field(default_factory=list)
    _step: int = 1  # the broker is step 1

    def say(self, title: str, text: str) -> None:
        """Print one numbered step line: ``<n>. <title>: <text>``."""
        self._step += 1
        self.console.print(f"[bold]{self._step}. {title}[/]: {text}")

    def topic(self, name: str) -> str:
        full = f"demo-{self.run_id}-{name}"
        self.topics.append(full)
        return full


def _step_broker(console: Console) -> str:
    external = external_bootstrap()
    if external:
        console.print(f"[bold]1. broker[/]: using KAFKA_BOOTSTRAP_SERVERS={external}")
        return external
    broker = LocalBroker()
    with console.status("starting the local Apache Kafka broker"):
        result = broker.up()
    how = "already running" if result.already_running else f"started in {result.seconds:.1f} s"
    console.print(
        f"[bold]1. broker[/]: Apache Kafka {broker.version} at {broker.bootstrap} ({how}); "
        "`streams broker down` stops it"
    )
    return broker.bootstrap


def _step_round_trip(ctx: DemoContext) -> None:
    """Produce keyed records to a 4-partition topic and read them all back."""
    count = 500
    topic = ctx.topic("round-trip")
    create_topic(admin_client(ctx.bootstrap), topic, partitions=4)
    producer = Producer({"bootstrap.servers": ctx.bootstrap, "linger.ms": 5, "acks": "all"})
    acked: list[int] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is None:
            acked.append(1)

    for i in range(count):
        producer.produce(topic, key=f"key-{i % 20}", value=f"record {i}", on_delivery=on_delivery)
    producer.flush(30)
    consumer = Consumer(
        {
            "bootstrap.servers": ctx.bootstrap,
            "group.id": f"demo-{ctx.run_id}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    seen: dict[int, int] = {}
    deadline = time.monotonic() + 60
    while sum(seen.values()) < count and time.monotonic() < deadline:
        for msg in consumer.consume(500, timeout=1.0):
            partition = msg.partition()
            if msg.error() is None and partition is not None:
                seen[partition] = seen.get(partition, 0) + 1
    consumer.close()
    per_partition = ", ".join(f"p{p}={n}" for p, n in sorted(seen.items()))
    ctx.say(
        "round trip",
        f"produced {len(acked)}/{count} (acks=all), "
        f"consumed {sum(seen.values())} from {topic} ({per_partition})",
    )
    if sum(seen.values()) != count:
        raise RuntimeError(f"demo read back {sum(seen.values())} of {count} records")


STEPS: list[Callable[[DemoContext], None]] = [
    _step_round_trip,
    step_schemas,
    step_topology,
    step_failures,
    step_state,
    step_replay,
    step_testing,
]


def run_demo(console: Console | None = None) -> None:
    console = console or Console()
    bootstrap = _step_broker(console)
    ctx = DemoContext(bootstrap=bootstrap, console=console)
    try:
        for step in STEPS:
            step(ctx)
    finally:
        delete_topics(admin_client(bootstrap), ctx.topics)
    console.print("[bold green]demo done[/]")
