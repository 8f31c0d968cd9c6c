"""Bench section ``faust``: a Faust agent reading and writing our envelopes vs Faust's JSON.

The same agent (read an order, send a reply to an output topic) runs twice under Faust's
test context on the same orders: once on envelope topics (``EnvelopeSchema``: our decode,
version resolution and encode with headers), once on plain topics with Faust's default
JSON codec (the payload dict). Records go in as bytes and replies are serialized by the
output topic; the broker is left out (only the producer call is replaced), so the figure
is what the schema adds to a Faust agent's own per-record work. Target: ours costs at most
20% more per record (shown as a throughput ratio of at least 0.83). Needs the ``faust``
extra; without it the section reports that in its note.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime
from typing import Any

from streams.bench.core import BenchContext, Row
from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.schemas import default_catalog

SECTION = "faust"


def _orders(count: int) -> list[Envelope]:
    now = datetime.now(UTC)
    return [
        Envelope.new(
            "order.accepted", {"order_id": f"o-{i}", "accepted_at": now}, key=f"c-{i % 50}"
        )
        for i in range(count)
    ]


async def _run_agent(envelopes: bool, records: list[tuple[bytes, Any]]) -> float:
    import faust  # noqa: PLC0415 - the faust extra, only for this section

    from streams.faust import EnvelopeSchema, envelope_topic  # noqa: PLC0415

    app = faust.App(f"bench-{envelopes}", store="memory://", web_enabled=False)
    source: Any
    out: Any
    if envelopes:
        catalog = default_catalog()
        source = envelope_topic(app, "in", EnvelopeSchema(catalog, "order.accepted"))
        out = envelope_topic(app, "out", EnvelopeSchema(catalog, "shipment.requested"))
    else:
        source = app.topic("in", value_serializer="json")
        out = app.topic("out", value_serializer="json")

    @app.agent(source)
    async def ship(stream: Any) -> Any:
        async for order in stream:
            if envelopes:
                data = order.data
                reply: Any = order.follow(
                    "shipment.requested",
                    {
                        "order_id": data["order_id"],
                        "carrier": "ups",
                        "requested_at": data["accepted_at"],
                    },
                )
            else:
                reply = {
                    "order_id": order["order_id"],
                    "carrier": "ups",
                    "requested_at": order["accepted_at"],
                }
            out.prepare_value(reply, None)  # the send's serialization; no broker
            yield reply

    async with ship.test_context(channel=source) as agent:
        started = time.perf_counter()
        for value, headers in records:
            await agent.put(value=value, headers=headers)
        return time.perf_counter() - started


def run(ctx: BenchContext) -> list[Row]:
    try:
        import faust  # noqa: F401, PLC0415
    except ImportError:
        return [Row(SECTION, "agent", 0, "rec/s", note="needs pip install 'streams[faust]'")]
    count = 2_000 if ctx.quick else 10_000
    orders = _orders(count)
    codec = AvroCodec(default_catalog())
    ours = [codec.encode(env) for env in orders]
    plain = [
        (
            json.dumps(
                {"order_id": e.data["order_id"], "accepted_at": e.data["accepted_at"].timestamp()}
            ).encode(),
            None,
        )
        for e in orders
    ]
    asyncio.run(_run_agent(True, ours[:200]))  # warm up both paths
    asyncio.run(_run_agent(False, plain[:200]))
    with_envelopes = asyncio.run(_run_agent(True, ours))
    with_json = asyncio.run(_run_agent(False, plain))
    us_ours, us_json = with_envelopes / count * 1e6, with_json / count * 1e6
    return [
        Row(
            SECTION,
            "agent with EnvelopeSchema vs JSON",
            count / with_envelopes,
            "rec/s",
            baseline=count / with_json,
            target=1 / 1.2,
            note=f"{us_ours:.1f} µs vs {us_json:.1f} µs per record (test context, no broker)",
        )
    ]
