"""The Faust step of the demo: a Faust agent reads and writes Streams envelopes.

Writes 30 ``order.accepted`` envelopes (10 customers, one correlation id per order) and a
garbage record to a 3-partition topic, runs the example Faust app
(``topology/faust_shipping.py``) as a worker in a child process, and waits for its 30
``shipment.requested`` envelopes and for the garbage in its dead-letter topic. Each
shipment must follow its order (same correlation id, causation id = the order's id, same
key). The worker's working folder is a temporary one (Faust keeps a data folder there).
Without the ``faust`` extra the step says so and does nothing. Raises RuntimeError when a
shipment is missing or does not follow its order.
"""

from __future__ import annotations

import importlib.util
import tempfile
import time
from datetime import UTC, datetime

from streams.cluster import admin_client, create_topic
from streams.codec import AvroCodec
from streams.demo.context import DemoContext
from streams.envelope import Envelope
from streams.examples import example_path
from streams.failures.topics import dlq_topic
from streams.schemas import default_catalog
from streams.testing.produce import produce_envelopes, produce_records, wait_for_envelopes
from streams.testing.wait import wait_for_records

ORDERS = 30


def step_faust(ctx: DemoContext) -> None:
    """Orders in, the Faust agent, shipment requests out; garbage to the DLQ."""
    if importlib.util.find_spec("faust") is None:
        ctx.say("faust", "skipped: the Faust interop needs pip install 'streams[faust]'")
        return
    from streams.testing.faust_worker import FaustWorkerProcess  # noqa: PLC0415 - step only

    app_id = f"{ctx.prefix}-faust"  # an app of the run: its topics are deleted with the rest
    source, output = ctx.topic("faust-accepted"), ctx.topic("faust-shipments")
    dlq = dlq_topic(app_id, source)
    create_topic(admin_client(ctx.bootstrap), source, partitions=3)
    codec = AvroCodec(default_catalog())
    now = datetime.now(UTC)
    orders = produce_envelopes(
        ctx.bootstrap,
        source,
        [Envelope.new("order.accepted", {"order_id": f"o-{i}", "accepted_at": now},
                      key=f"c-{i % 10}", source="demo") for i in range(ORDERS)],
        codec,
    )  # fmt: skip
    produce_records(ctx.bootstrap, source, [(b"c-0", b"\x00garbage", None)])
    env = {"FAUST_SHIPPING_APP_ID": app_id, "FAUST_SHIPPING_INPUT": source,
           "FAUST_SHIPPING_OUTPUT": output, "KAFKA_BOOTSTRAP_SERVERS": ctx.bootstrap}  # fmt: skip
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="streams-demo-faust-") as folder:
        worker = FaustWorkerProcess(example_path("faust_shipping"), env=env, cwd=folder)
        with worker:  # started here; stopped (SIGTERM) on the way out, also on an error
            worker.wait_started(90)
            shipments = wait_for_envelopes(ctx.bootstrap, output, ORDERS, codec, timeout=60)
            dead = wait_for_records(ctx.bootstrap, dlq, 1, timeout=60)
    by_id = {order.id: order for order in orders}
    followed = sum(
        1
        for s in shipments
        if s.causation_id in by_id
        and s.correlation_id == by_id[s.causation_id].correlation_id
        and s.key == by_id[s.causation_id].key
    )
    ctx.say(
        "faust",
        f"a Faust agent (`topology/faust_shipping.py`) read {ORDERS} order.accepted envelopes "
        f"and wrote {len(shipments)} shipment.requested, {followed} following their order "
        f"(correlation, causation, key); the garbage went to {dlq} ({len(dead)}) "
        f"in {time.monotonic() - started:.1f} s",
    )
    if followed != ORDERS:
        raise RuntimeError(f"demo: {ORDERS - followed} shipments do not follow their order")
