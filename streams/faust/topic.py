"""``EnvelopeTopic``: the ``faust.Topic`` an ``EnvelopeSchema`` is read and written through.

Two differences from ``faust.Topic``, both for envelopes only:

- A record its schema could not decode was already dead-lettered or logged
  (``BadEnvelopeError``); Faust has acked it. ``faust.Topic`` would then throw the error
  into the agent's stream, crashing the agent; this topic lets the agent carry
  on with the next record. Other decode errors behave as in Faust.
- Sending an envelope without a key sends it with the envelope's key (as a Streams
  topology does), so per-key order holds on the next hop.

``envelope_topic(app, name, schema)`` makes one (``app.topic`` with this class).
"""

from __future__ import annotations

from typing import Any

import faust

from streams.envelope import Envelope
from streams.faust.errors import BadEnvelopeError
from streams.faust.records import EnvelopeRecord
from streams.faust.schema import EnvelopeSchema


class EnvelopeTopic(faust.Topic):
    """A Faust topic of Streams envelopes; see the module docstring."""

    handles_bad_envelopes = True  # EnvelopeSchema.compile checks it

    async def on_value_decode_error(self, exc: Exception, message: Any) -> None:
        if isinstance(exc, BadEnvelopeError):
            return  # dead-lettered or logged by the schema's decode, and acked by Faust
        await super().on_value_decode_error(exc, message)

    def as_future_message(
        self, key: Any = None, value: Any = None, *args: Any, **kwargs: Any
    ) -> Any:
        if key is None:
            if isinstance(value, Envelope):
                key = value.key
            elif isinstance(value, EnvelopeRecord) and value.envelope is not None:
                key = value.envelope.key
        return super().as_future_message(key, value, *args, **kwargs)


def envelope_topic(app: Any, name: str, schema: EnvelopeSchema, **options: Any) -> EnvelopeTopic:
    """``app.topic(name, schema=schema, **options)`` as an ``EnvelopeTopic``.

    Raises ``ConfluentTransportError`` on the ``confluent://`` transport."""
    topic: EnvelopeTopic = EnvelopeTopic(app, topics=[name], schema=schema, **options)
    return topic
