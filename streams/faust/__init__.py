"""Faust interop: Faust agents read and write Streams envelopes (``pip install 'streams[faust]'``).

- ``EnvelopeSchema(catalog, type, version)``: a ``faust.Schema`` decoding record values
  and ``ce_*`` headers with Streams' codec (versions resolved to the declared one) into
  ``Envelope``s or generated records, and writing our wire format; bad input goes to the
  DLQ (``on_error="dlq"``) or is logged (``"skip"``), never to the agent.
- ``envelope_topic(app, name, schema)`` / ``EnvelopeTopic``: the topic class that keeps
  the agent running past bad input and keys sends by the envelope's key.
- ``record_class(catalog, type, version)``: a typed ``faust.Record`` for a payload;
  ``follow(cause, record)``: the reply's envelope (same correlation id, causation = cause).
- ``ensure_dead_letter_topic``: create ``<app>-<topic>-dlq`` before the worker starts.

Only the aiokafka transport (``kafka://``) is supported: the confluent transport drops
headers, and is refused with ``ConfluentTransportError``. Importing this package imports
faust (the ``faust`` extra); nothing else in ``streams`` imports it.
"""

from __future__ import annotations

from streams.faust.dead_letter import dead_letter_route, ensure_dead_letter_topic
from streams.faust.errors import (
    BadEnvelopeError,
    ConfluentTransportError,
    EnvelopeTopicError,
    FaustInteropError,
    WrongTypeError,
)
from streams.faust.records import EnvelopeRecord, follow, record_class
from streams.faust.schema import EnvelopeSchema, OnError
from streams.faust.topic import EnvelopeTopic, envelope_topic
from streams.faust.transport import bootstrap_servers, check_transport

__all__ = [
    "BadEnvelopeError",
    "ConfluentTransportError",
    "EnvelopeRecord",
    "EnvelopeSchema",
    "EnvelopeTopic",
    "EnvelopeTopicError",
    "FaustInteropError",
    "OnError",
    "WrongTypeError",
    "bootstrap_servers",
    "check_transport",
    "dead_letter_route",
    "ensure_dead_letter_topic",
    "envelope_topic",
    "follow",
    "record_class",
]
