"""Bench section ``faust``: a Faust agent reading and writing our envelopes vs Faust's JSON.

The same agent runs on the same orders under Faust's test context: it reads an accepted
order and sends a shipment request that follows it (a new time-ordered id, the order's
correlation id, causation id = the order's id, the order's key and source), as
``Envelope.follow`` does. Every side carries the same information per record: id, type,
version, time, source, correlation and causation ids, key and the payload.

- envelopes: envelope topics (``EnvelopeSchema``, ``EnvelopeTopic``). The value is our
  Avro envelope with its ``ce_*`` headers; the schema decodes it to an ``Envelope``
  (headers checked against the value, payload read as the declared version, timestamps
  as datetimes), the agent calls ``order.follow(...)``, and the send encodes the reply
  (payload checked against its .avsc) and writes its three headers.
- records: the same, with ``as_record=True``, as ``topology/faust_shipping.py`` does: the
  agent gets a generated ``faust.Record``, builds the reply record and sends
  ``follow(order, request)``.
- JSON (the baseline): plain topics with Faust's default JSON codec
  (``value_serializer="json"``), no Streams code. The value is one JSON object of every
  envelope field (``time`` and the payload's timestamp as ISO text), the agent reads it as
  a dict and builds the reply dict by hand (``uuid7`` from ``uuid_utils``, as ``new_id``;
  the timestamp copied as text), and the send serializes it with Faust's codec (orjson
  when installed, else the standard library's: the note says which).

Each record goes in as bytes with its key (``agent.put``: Faust's decode, then the agent
takes it); the reply goes through the topic's real send path up to the producer
(``as_future_message``: key and value serialized, headers prepared), so the broker is
left out and the figure is the schema's cost inside a Faust agent's own per-record work.
The three agents run side by side in one app: each is warmed up, then they take
``CHUNK`` records in turn until every side has had them all, so a busy moment of the
machine hits all of them alike; a row shows the medians of the chunks' µs per record (the
quartiles in its note). Target: ours costs at most 20% more per record than JSON (a
throughput ratio of at least 0.83). Needs the ``faust`` extra; without it the section
says so in its note.

Measured on a busy 2-core machine: Envelope agent 52-61 vs JSON 55-61 µs (ratio
1.0-1.1), generated records 59-71 µs (0.87-0.99), Faust's codec on the standard json. With
orjson (``faust-streaming[fast]``) the JSON agent drops to about 45 µs and the ratios to
0.86-0.90 and 0.74-0.85: what stays is the Avro work itself (decode and encode of the
envelope and payload, about 8 µs a record against orjson's 2) and, for records, Faust's
own ``Record`` construction.
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from streams.bench.core import BenchContext, Row
from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.schemas import default_catalog

if TYPE_CHECKING:
    import faust

SECTION = "faust"
CHUNK = 500  # records a side takes before the next side's turn
WARM_UP = 1_000

Records = list[tuple[bytes, bytes, Any]]  # (key, value, headers) as the agent receives them


def _orders(count: int) -> list[Envelope]:
    now = datetime.now(UTC)
    return [
        Envelope.new(
            "order.accepted", {"order_id": f"o-{i}", "accepted_at": now}, key=f"c-{i % 50}"
        )
        for i in range(count)
    ]


def _as_json(env: Envelope) -> bytes:
    """The order as a JSON team would write it: every envelope field, times as ISO text."""
    return json.dumps(
        {
            "id": env.id,
            "type": env.type,
            "version": env.version,
            "time": env.time.isoformat(timespec="microseconds"),
            "source": env.source,
            "correlation_id": env.correlation_id,
            "causation_id": env.causation_id,
            "key": env.key,
            "data": {
                "order_id": env.data["order_id"],
                "accepted_at": env.data["accepted_at"].isoformat(timespec="microseconds"),
            },
        }
    ).encode()


def _envelope_agent(app: faust.App) -> tuple[Any, Any]:
    from streams.faust import EnvelopeSchema, envelope_topic  # noqa: PLC0415 - faust extra

    catalog = default_catalog()
    source = envelope_topic(app, "envelopes-in", EnvelopeSchema(catalog, "order.accepted"))
    out = envelope_topic(app, "envelopes-out", EnvelopeSchema(catalog, "shipment.requested"))

    @app.agent(source)
    async def ship(stream: Any) -> Any:
        async for order in stream:
            data = order.data
            reply = order.follow(
                "shipment.requested",
                {
                    "order_id": data["order_id"],
                    "carrier": "ups",
                    "requested_at": data["accepted_at"],
                },
            )
            out.as_future_message(None, reply)  # the send up to the producer (key: the reply's)
            yield reply

    return ship, source


def _record_agent(app: faust.App) -> tuple[Any, Any]:
    from streams.faust import EnvelopeSchema, envelope_topic, follow  # noqa: PLC0415

    catalog = default_catalog()
    orders = EnvelopeSchema(catalog, "order.accepted", as_record=True)
    shipments = EnvelopeSchema(catalog, "shipment.requested", as_record=True)
    source = envelope_topic(app, "records-in", orders)
    out = envelope_topic(app, "records-out", shipments)
    shipment_requested = shipments.record
    assert shipment_requested is not None

    @app.agent(source)
    async def ship(stream: Any) -> Any:
        async for order in stream:
            request = shipment_requested(
                order_id=order.order_id, carrier="ups", requested_at=order.accepted_at
            )
            reply = follow(order, request)
            out.as_future_message(None, reply)
            yield reply

    return ship, source


def _json_agent(app: faust.App) -> tuple[Any, Any]:
    from uuid_utils import uuid7  # noqa: PLC0415 - what new_id uses, not Streams code

    source = app.topic("json-in", value_serializer="json")
    out = app.topic("json-out", value_serializer="json")

    @app.agent(source)
    async def ship(stream: Any) -> Any:
        async for order in stream:
            data = order["data"]
            reply = {
                "id": str(uuid7()),
                "type": "shipment.requested",
                "version": 1,
                "time": datetime.now(UTC).isoformat(timespec="microseconds"),
                "source": order["source"],
                "correlation_id": order["correlation_id"] or order["id"],
                "causation_id": order["id"],
                "key": order["key"],
                "data": {
                    "order_id": data["order_id"],
                    "carrier": "ups",
                    "requested_at": data["accepted_at"],
                },
            }
            out.as_future_message(reply["key"], reply)  # the send up to the producer
            yield reply

    return ship, source


Agent = Callable[[Any], tuple[Any, Any]]
SIDES: dict[str, Agent] = {
    "envelopes": _envelope_agent,
    "records": _record_agent,
    "json": _json_agent,
}


async def _measure(inputs: dict[str, Records]) -> dict[str, list[float]]:
    """µs per record of every side, per chunk: the agents run side by side in one app and
    take ``CHUNK`` records in turn, so a busy moment of the machine hits all of them."""
    import faust  # noqa: PLC0415 - the faust extra, only for this section

    app = faust.App("bench-faust", store="memory://", web_enabled=False)
    async with AsyncExitStack() as stack:
        running = {}
        for side in inputs:
            agent, source = SIDES[side](app)
            running[side] = await stack.enter_async_context(agent.test_context(channel=source))
        for side, records in inputs.items():  # warm up every path
            for key, value, headers in records[:WARM_UP]:
                await running[side].put(key=key, value=value, headers=headers)
        # What is alive now (catalog, apps, records) stays: collections that follow scan
        # only what the agents make, so one per turn is cheap.
        gc.collect()
        gc.freeze()
        per_record: dict[str, list[float]] = {side: [] for side in inputs}
        for start in range(0, len(next(iter(inputs.values()))), CHUNK):
            for side, records in inputs.items():
                chunk = records[start : start + CHUNK]
                put = running[side].put
                gc.collect()  # no side pays for garbage another one left
                started = time.perf_counter()
                for key, value, headers in chunk:
                    await put(key=key, value=value, headers=headers)
                per_record[side].append((time.perf_counter() - started) / len(chunk) * 1e6)
        gc.unfreeze()
        return per_record


def _span(quartiles: list[float]) -> str:
    return f"{quartiles[0]:.0f}-{quartiles[2]:.0f}"


def _json_library() -> str:
    from faust.utils import json as faust_json  # noqa: PLC0415 - the faust extra

    if getattr(faust_json, "orjson", None) is not None:
        return "orjson"
    return str(getattr(faust_json, "json").__name__)  # noqa: B009 - not re-exported: simplejson or json


def run(ctx: BenchContext) -> list[Row]:
    try:
        import faust  # noqa: F401, PLC0415
    except ImportError:
        return [Row(SECTION, "agent", 0, "rec/s", note="needs pip install 'streams[faust]'")]
    count = 2_000 if ctx.quick else 20_000
    orders = _orders(count)
    codec = AvroCodec(default_catalog())
    avro: Records = []
    for env in orders:
        value, headers = codec.encode(env)
        avro.append(((env.key or "").encode(), value, headers))
    inputs = {
        "envelopes": avro,
        "records": avro,
        "json": [((env.key or "").encode(), _as_json(env), None) for env in orders],
    }
    us = asyncio.run(_measure(inputs))
    median = {side: statistics.median(chunks) for side, chunks in us.items()}
    quartiles = {side: statistics.quantiles(chunks, n=4) for side, chunks in us.items()}
    rows = []
    for side, name in (("envelopes", "Envelope"), ("records", "generated Record")):
        rows.append(
            Row(
                SECTION,
                f"agent on EnvelopeSchema ({name}) vs JSON",
                1e6 / median[side],
                "rec/s",
                baseline=1e6 / median["json"],
                target=1 / 1.2,
                note=(
                    f"{median[side]:.1f} vs {median['json']:.1f} µs/record, median of "
                    f"{len(us[side])} runs of {CHUNK} in turn (quartiles: ours "
                    f"{_span(quartiles[side])}, JSON {_span(quartiles['json'])}); Faust's "
                    f"JSON on {_json_library()}; test context, no broker"
                ),
            )
        )
    return rows
