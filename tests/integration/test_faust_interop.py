"""Faust agents in a Streams system, on the real broker.

Each test runs Faust workers as child processes (``FaustWorkerProcess``: Faust's own
command line, stopped with SIGTERM) next to ``streams run`` topologies, and waits on
output topics with deadlines.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runner import streams

from streams.cluster import admin_client, delete_topics
from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.failures.headers import EXCEPTION, OFFSET, PARTITION, REPLAY_OF, STAGE, TOPIC
from streams.testing import KafkaIO
from streams.testing.faust_worker import FaustWorkerProcess
from streams.testing.topics import unique_topic_name

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "topology" / "faust_shipping.py"

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def faust_worker(
    kafka_bootstrap: str, tmp_path: Path
) -> Iterator[Callable[..., FaustWorkerProcess]]:
    """``faust_worker(path, app_id=..., **env)``: a started worker; stopped (and its
    ``<app_id>-*`` topics deleted) after the test, which fails if it did not stop cleanly.
    It runs in the test's directory: Faust keeps its ``<app_id>-data`` in the current one."""
    started: list[tuple[FaustWorkerProcess, str]] = []

    def start(path: Path, *, app_id: str, **env: str) -> FaustWorkerProcess:
        worker = FaustWorkerProcess(
            path,
            env={
                "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
                "STREAMS_SCHEMAS": str(ROOT / "schemas"),
                **env,
            },
            cwd=tmp_path,
        )
        worker.start()
        started.append((worker, app_id))
        worker.wait_started(90)
        return worker

    yield start
    problems = []
    for worker, app_id in started:
        code = worker.stop()
        if code != 0:
            problems.append(f"Faust worker exited with {code}:\n{worker.output(30)}")
        worker.close()
        admin = admin_client(kafka_bootstrap)
        owned = [t for t in admin.list_topics(timeout=30).topics if t.startswith(f"{app_id}-")]
        delete_topics(admin, owned)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def _example(name: str) -> Any:
    """An example file of topology/ as a module (they are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(
        f"example_{name}", ROOT / "topology" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _shipping_worker(
    faust_worker: Callable[..., FaustWorkerProcess], app_id: str, input: str, output: str
) -> FaustWorkerProcess:
    return faust_worker(
        EXAMPLE,
        app_id=app_id,
        FAUST_SHIPPING_APP_ID=app_id,
        FAUST_SHIPPING_INPUT=input,
        FAUST_SHIPPING_OUTPUT=output,
    )


def test_streams_topology_to_faust_agent_to_streams_topology(
    make_topic: Callable[..., str],
    run_topology: Callable[..., Any],
    faust_worker: Callable[..., FaustWorkerProcess],
    kafka_io: KafkaIO,
) -> None:
    orders = _example("orders")
    orders_topic = make_topic("orders", partitions=3)
    orders_app, faust_app, shipping_app = (unique_topic_name(n) for n in ("ord", "fx", "ship"))
    shipments = f"{faust_app}-shipments"
    run_topology("topology/orders.py", app_id=orders_app, input=orders_topic)
    _shipping_worker(faust_worker, faust_app, f"{orders_app}-accepted", shipments)
    run_topology("topology/shipping.py", app_id=shipping_app, input=shipments)

    placed = kafka_io.produce(orders_topic, orders.sample_orders(60, customers=6))
    valid = [e for e in placed if orders.is_valid(orders.enrich(orders.validate(e)))]
    accepted = kafka_io.wait_for_envelopes(f"{orders_app}-accepted", len(valid), 90)
    booked = kafka_io.wait_for_envelopes(f"{shipping_app}-booked", len(accepted), 90)
    requested = kafka_io.wait_for_envelopes(shipments, len(accepted), 30)

    # Every accepted order is booked once, through one shipment request.
    assert sorted(e.data["order_id"] for e in booked) == sorted(
        e.data["order_id"] for e in accepted
    )
    assert len({e.id for e in requested}) == len(requested) == len(accepted)
    by_id = {e.id: e for e in [*accepted, *requested]}
    placed_by_order = {e.data["order_id"]: e for e in placed}
    for book in booked:
        request = by_id[book.causation_id]  # type: ignore[index]
        order = by_id[request.causation_id]  # type: ignore[index]
        assert request.type == "shipment.requested" and order.type == "order.accepted"
        assert book.data["order_id"] == request.data["order_id"] == order.data["order_id"]
        origin = placed_by_order[order.data["order_id"]]
        assert book.correlation_id == request.correlation_id == origin.id
        assert book.key == request.key == origin.key
    # Per key, shipments are booked in the order the orders were accepted.
    for key in {e.key for e in accepted}:
        assert [e.data["order_id"] for e in booked if e.key == key] == [
            e.data["order_id"] for e in accepted if e.key == key
        ]


def test_bad_input_goes_to_the_dlq_the_agent_keeps_going_and_dlq_replay_sends_it_back(
    make_topic: Callable[..., str],
    faust_worker: Callable[..., FaustWorkerProcess],
    kafka_io: KafkaIO,
    kafka_bootstrap: str,
) -> None:
    codec: AvroCodec = kafka_io.codec
    accepted = make_topic("accepted", partitions=2)
    app_id = unique_topic_name("fx")
    shipments = f"{app_id}-shipments"
    _shipping_worker(faust_worker, app_id, accepted, shipments)
    good = Envelope.new("order.accepted", {"order_id": "o-1", "accepted_at": _now()}, key="k")
    value, headers = codec.encode(good)
    unknown_type = codec.encode(Envelope.new("order.placed", _placed(), version=2, key="k"))
    version_99 = [(n, b"99" if n == "ce_dataversion" else v) for n, v in headers]
    bad = [
        (b"k", b"\x00garbage\xff", [("origin", b"garbage")]),
        (b"k", b"not an envelope either", None),
        (b"k", unknown_type[0], unknown_type[1]),
        (b"k", _with_version(value, 99), version_99),
    ]
    kafka_io.produce_records(accepted, [*bad, (b"k", value, headers)])

    (shipment,) = kafka_io.wait_for_envelopes(shipments, 1, 60)
    assert shipment.causation_id == good.id  # the good record after the bad ones
    dlq = f"{app_id}-{accepted}-dlq"
    letters = kafka_io.wait_for_records(dlq, len(bad), 30)
    assert [(m.key(), m.value()) for m in letters] == [(k, v) for k, v, _ in bad]
    for message, (_, _, original) in zip(letters, bad, strict=True):
        found = dict(message.headers() or [])
        assert found[STAGE] == b"decode"
        assert found[TOPIC] == accepted.encode()
        assert found[PARTITION] == str(message.partition()).encode()
        assert int(found[OFFSET]) >= 0
        assert found[EXCEPTION].startswith(b"streams.")
        for name, raw in original or []:
            assert found[name] == raw  # the original headers, untouched
    assert b"UnknownVersion" in dict(letters[3].headers())[EXCEPTION]

    # `streams dlq replay` sends them back to their topic and partition; the agent reads
    # them again (still bad: dead-lettered again) and keeps running.
    result = streams("dlq", "replay", dlq, "--execute", bootstrap=kafka_bootstrap)
    assert result.returncode == 0, result.stderr
    back = kafka_io.wait_for_records(
        accepted, len(bad), 30, match=lambda m: REPLAY_OF in dict(m.headers() or [])
    )
    assert sorted(m.value() for m in back) == sorted(v for _, v, _ in bad)
    assert {(m.value(), m.partition()) for m in back} == {
        (m.value(), m.partition()) for m in letters
    }
    again = kafka_io.wait_for_records(
        dlq, len(bad), 60, match=lambda m: REPLAY_OF in dict(m.headers() or [])
    )
    assert len(again) == len(bad)


def test_versions_resolve_both_ways_between_faust_and_streams(
    make_topic: Callable[..., str],
    run_topology: Callable[..., Any],
    faust_worker: Callable[..., FaustWorkerProcess],
    kafka_io: KafkaIO,
    tmp_path: Path,
) -> None:
    source, faust_out = make_topic("placed"), make_topic("placed-v2")
    app_id, mirror_app = unique_topic_name("fxv"), unique_topic_name("v1mirror")
    app_file = tmp_path / "faust_v2.py"
    app_file.write_text(_V2_AGENT)
    topology_file = tmp_path / "v1_mirror.py"
    topology_file.write_text(_V1_TOPOLOGY)
    faust_worker(app_file, app_id=app_id, APP_ID=app_id, INPUT=source, OUTPUT=faust_out)
    run_topology(topology_file, app_id=mirror_app, input=faust_out)

    v1 = Envelope.new("order.placed", _placed(), version=1, key="c-1")
    kafka_io.produce(source, [v1])

    # The Faust agent declares v2: the v1 record reaches it with v2's default currency,
    # and it writes v2 (what it saw, currency included).
    (written,) = kafka_io.wait_for_envelopes(faust_out, 1, 60)
    assert written.version == 2
    assert written.data["currency"] == "EUR"
    assert written.causation_id == v1.id and written.correlation_id == v1.id
    # A Streams topology declaring v1 reads that v2 record as v1.
    (mirrored,) = kafka_io.wait_for_envelopes(f"{mirror_app}-mirror", 1, 60)
    assert mirrored.version == 1
    assert "currency" not in mirrored.data
    assert mirrored.data["order_id"] == v1.data["order_id"]


_V2_AGENT = """
import os
import faust
from streams.faust import EnvelopeSchema, envelope_topic
from streams.schemas import default_catalog

catalog = default_catalog()
app = faust.App(
    os.environ["APP_ID"],
    broker="kafka://" + os.environ["KAFKA_BOOTSTRAP_SERVERS"],
    store="memory://",
    web_enabled=False,
    topic_allow_declare=False,
)
schema = EnvelopeSchema(catalog, "order.placed", version=2)
source = envelope_topic(app, os.environ["INPUT"], schema)
out = envelope_topic(app, os.environ["OUTPUT"], schema)


@app.agent(source)
async def upgrade(stream):
    async for order in stream:
        await out.send(value=order.follow("order.placed", dict(order.data), version=2))


if __name__ == "__main__":
    app.main()
"""

_V1_TOPOLOGY = """
from streams.topology import TopologyBuilder, owned


def build(app_id="v1mirror", input="placed"):
    builder = TopologyBuilder(app_id)
    orders = builder.source(input, type="order.placed", version=1)
    orders.to(owned("mirror"), type="order.placed", version=1)
    return builder.build()
"""


def _now() -> Any:
    from datetime import UTC, datetime  # noqa: PLC0415

    return datetime.now(UTC)


def _placed() -> dict[str, Any]:
    return {
        "order_id": "o-v1",
        "customer_id": "c-1",
        "items": [{"sku": "s", "quantity": 1, "unit_price_cents": 100}],
        "total_cents": 100,
    }


def _with_version(value: bytes, version: int) -> bytes:
    """``value`` (an envelope) claiming payload version ``version``: re-encoded by hand
    with the envelope schema, the payload bytes unchanged."""
    from io import BytesIO  # noqa: PLC0415

    from fastavro import schemaless_reader, schemaless_writer  # noqa: PLC0415

    from streams.schemas import default_catalog  # noqa: PLC0415

    schema = default_catalog().envelope
    record = schemaless_reader(BytesIO(value), schema, None)
    record["version"] = version
    out = BytesIO()
    schemaless_writer(out, schema, record)
    return out.getvalue()
