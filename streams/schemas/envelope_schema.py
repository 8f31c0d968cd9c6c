"""The envelope's own Avro schema, built in so the codec never depends on a file.

``schemas/envelope.avsc`` is the same schema for other clients to read; a catalog refuses
a folder whose ``envelope.avsc`` differs from this one (docs aside).
"""

from __future__ import annotations

from typing import Any

ENVELOPE_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "Envelope",
    "namespace": "streams",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "type", "type": "string"},
        {"name": "version", "type": "int"},
        {"name": "time", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "source", "type": "string"},
        {"name": "key", "type": ["null", "string"], "default": None},
        {"name": "correlation_id", "type": ["null", "string"], "default": None},
        {"name": "causation_id", "type": ["null", "string"], "default": None},
        {"name": "data", "type": "bytes"},
    ],
}
