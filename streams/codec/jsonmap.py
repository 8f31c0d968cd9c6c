"""Payloads as JSON, both ways: what ``streams consume`` prints, ``streams produce`` reads.

JSON has no times, bytes or decimals, so Avro's types map to it as follows, the same way
in both directions (what ``consume`` prints, ``produce`` takes back):

=============================================  ============================================
Avro                                           JSON
=============================================  ============================================
``timestamp-*``, ``local-timestamp-*``         ISO 8601 text (``produce`` also takes a
                                               number: epoch ms or µs, as the schema says)
``date``, ``time-*``                           ISO 8601 text (or the schema's number)
``decimal``                                    text (``"12.30"``; a JSON number is taken)
``bytes``, ``fixed``                           base64 text
``uuid``                                       text
=============================================  ============================================

``from_json`` never raises: a value it cannot convert is left as it is, so the codec's
``EncodeError`` names the field and says what it expected.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal
import uuid
from collections.abc import Mapping
from typing import Any

from streams.envelope import Envelope

_TIMESTAMPS = {
    "timestamp-millis",
    "timestamp-micros",
    "local-timestamp-millis",
    "local-timestamp-micros",
}
_TIMES = {"time-millis", "time-micros"}


def to_json(value: Any) -> Any:
    """``value`` (a decoded payload, or any part of it) with only JSON types in it."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)  # Decimal, UUID: their canonical text


def from_json(schema: Any, value: Any) -> Any:
    """``value``, read from JSON, with text turned into what ``schema`` (fastavro-parsed)
    expects where the table above says so. Never raises."""
    names = dict(schema.get("__named_schemas", {})) if isinstance(schema, dict) else {}
    try:
        return _convert(schema, value, names)
    except Exception:  # the encoder will name the field; a converter must not hide it
        return value


def _convert(schema: Any, value: Any, names: dict[str, Any]) -> Any:
    if isinstance(schema, str):
        if schema in names:
            return _convert(names[schema], value, names)
        return _primitive(schema, value)
    if isinstance(schema, list):  # a union: the first branch that takes the value
        if value is None:
            return None
        for branch in schema:
            converted = _convert(branch, value, names)
            if converted is not value:
                return converted
        return value
    if not isinstance(schema, dict):
        return value
    logical = schema.get("logicalType")
    if logical is not None:
        converted = _logical(logical, schema, value)
        if converted is not value:
            return converted
    kind = schema.get("type")
    if kind in {"record", "error"} and isinstance(value, Mapping):
        out = dict(value)
        for field in schema["fields"]:
            if field["name"] in out:
                out[field["name"]] = _convert(field["type"], out[field["name"]], names)
        return out
    if kind == "array" and isinstance(value, list):
        return [_convert(schema["items"], v, names) for v in value]
    if kind == "map" and isinstance(value, Mapping):
        return {k: _convert(schema["values"], v, names) for k, v in value.items()}
    if kind == "fixed":
        return _primitive("bytes", value)
    if isinstance(kind, str) and kind in {"enum", "record", "error", "array", "map"}:
        return value  # a value of the wrong shape: the encoder says which field
    return _convert(kind, value, names)


def _primitive(kind: str, value: Any) -> Any:
    if kind == "bytes" and isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return value
    return value


def _logical(logical: str, schema: Mapping[str, Any], value: Any) -> Any:
    if not isinstance(value, str):
        if logical == "decimal" and isinstance(value, int | float) and not isinstance(value, bool):
            return decimal.Decimal(str(value))
        return value
    try:
        if logical in _TIMESTAMPS:
            when = dt.datetime.fromisoformat(value)
            if logical.startswith("timestamp") and when.tzinfo is None:
                return value  # an instant needs a zone: refused by the encoder, with the field
            return when
        if logical == "date":
            return dt.date.fromisoformat(value)
        if logical in _TIMES:
            return dt.time.fromisoformat(value)
        if logical == "decimal":
            number = decimal.Decimal(value)
            return number if number.is_finite() else value
        if logical == "uuid" and schema.get("type") == "fixed":
            return uuid.UUID(value).bytes
    except (ValueError, decimal.InvalidOperation):
        return value
    return value


def envelope_fields(env: Envelope) -> dict[str, Any]:
    """An envelope as JSON: its metadata, then the payload (``data``) mapped as above."""
    return {
        "id": env.id,
        "type": env.type,
        "version": env.version,
        "time": env.time.isoformat(),
        "source": env.source,
        "key": env.key,
        "correlation_id": env.correlation_id,
        "causation_id": env.causation_id,
        "data": to_json(env.data),
    }
