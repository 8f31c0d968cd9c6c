"""The example Faust agent under Faust's own test context: no broker.

Records go in as bytes through the agent's envelope topic (our decode), replies come out
through the output topic's serialization (our encode); only the producer is replaced.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.faust import EnvelopeSchema, envelope_topic
from streams.faust.topic import EnvelopeTopic
from streams.schemas import default_catalog

ROOT = Path(__file__).resolve().parents[3]


def _example() -> Any:
    spec = importlib.util.spec_from_file_location(
        "faust_shipping_example", ROOT / "topology" / "faust_shipping.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_agent_follows_each_order_with_a_shipment_and_skips_garbage(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    catalog = default_catalog()
    codec = AvroCodec(catalog)
    example = _example()
    app = example.make_app(app_id="unit-shipping", input="accepted", output="shipments")
    (agent,) = app.agents.values()
    sent: list[tuple[str, Any, bytes, Any]] = []

    async def send(self: EnvelopeTopic, *, key: Any = None, value: Any = None, **_: Any) -> None:
        payload, headers = self.prepare_value(value, None)  # the topic's own encoding
        sent.append((self.get_topic_name(), key, payload, headers))

    monkeypatch.setattr(EnvelopeTopic, "send", send)
    orders = [
        Envelope.new(
            "order.accepted", {"order_id": f"o-{i}", "accepted_at": datetime.now(UTC)}, key=k
        )
        for i, k in enumerate(["c-1", "c-2", "c-1"])
    ]

    async def run() -> None:
        schema = EnvelopeSchema(catalog, "order.accepted", as_record=True, on_error="skip")
        channel = envelope_topic(app, "accepted", schema)
        async with agent.test_context(channel=channel) as tested:
            for env in orders[:2]:
                await tested.put(value=codec.encode(env)[0], headers=codec.encode(env)[1])
            # Garbage never reaches the agent: logged, and the next record is processed.
            await tested.put(value=b"\x00garbage", headers=None, wait=False)
            await tested.put(value=codec.encode(orders[2])[0], headers=codec.encode(orders[2])[1])

    with caplog.at_level(logging.WARNING, logger="streams.faust"):
        asyncio.run(run())
    assert any("skipped accepted[0]@2" in r.getMessage() for r in caplog.records)
    assert len(sent) == 3
    for order, (topic, _, payload, headers) in zip(orders, sent, strict=True):
        shipment = codec.decode(payload, headers)
        assert topic == "shipments"
        assert shipment.type == "shipment.requested" and shipment.version == 1
        assert shipment.data["order_id"] == order.data["order_id"]
        assert shipment.data["carrier"] == example.carrier_for(order.key)
        assert shipment.correlation_id == order.correlation_id
        assert shipment.causation_id == order.id
        assert shipment.key == order.key
