"""Payload types every catalog has, whatever its folder holds.

``streams.error`` v1 is the payload of an error reply: what a topology sends the requester
of a request it dead-lettered (``streams.topology.reply``), so the caller hears of the
failure at once instead of waiting for its timeout. A schemas folder may not define a type
of that name.
"""

from __future__ import annotations

from typing import Any

ERROR_TYPE = "streams.error"
ERROR_VERSION = 1

ERROR_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "Error",
    "namespace": "streams",
    "doc": "A request failed and went to the dead-letter topic: the requester's error reply.",
    "fields": [
        {"name": "exception", "type": "string", "doc": "module.QualName of the exception"},
        {"name": "message", "type": "string"},
        {"name": "stage", "type": "string", "doc": "decode or process"},
        {"name": "step", "type": ["null", "string"], "default": None},
        {"name": "topic", "type": "string", "doc": "where the request was first read"},
        {"name": "partition", "type": "int"},
        {"name": "offset", "type": "long"},
        {"name": "attempts", "type": "int"},
        {"name": "dead_letter_topic", "type": "string"},
    ],
}

BUILTIN_SCHEMAS: dict[tuple[str, int], dict[str, Any]] = {
    (ERROR_TYPE, ERROR_VERSION): ERROR_SCHEMA,
}
