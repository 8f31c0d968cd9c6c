"""Find which field of a payload breaks its schema, for ``EncodeError`` messages.

Runs only after fastavro refused a record, so it may be slow; it never raises.
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections.abc import Mapping
from typing import Any

_INT_RANGE = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
LOGICAL_TYPES: dict[str, type] = {
    "timestamp-millis": dt.datetime,
    "timestamp-micros": dt.datetime,
    "local-timestamp-millis": dt.datetime,
    "local-timestamp-micros": dt.datetime,
    "date": dt.date,
    "time-millis": dt.time,
    "time-micros": dt.time,
    "decimal": decimal.Decimal,
    "uuid": uuid.UUID,
}
"""The Python type of a value of each Avro logical type (what fastavro writes them from)."""


def locate(schema: Any, datum: Any) -> tuple[str, str] | None:
    """``(field path, reason)`` of the first part of ``datum`` that ``schema`` refuses.

    ``schema`` is fastavro-parsed (named types referenced by full name). None when nothing
    wrong was found.
    """
    names = dict(schema.get("__named_schemas", {})) if isinstance(schema, dict) else {}
    try:
        return _find(schema, datum, "", names)
    except Exception:  # a locator must not hide the original error
        return None


def _find(schema: Any, datum: Any, path: str, names: dict[str, Any]) -> tuple[str, str] | None:
    if isinstance(schema, str) and schema in names:
        schema = names[schema]
    if isinstance(schema, list):
        problems = [_find(branch, datum, path, names) for branch in schema]
        if any(p is None for p in problems):
            return None
        non_null = [p for b, p in zip(schema, problems, strict=True) if b != "null"]
        if len(non_null) == 1 and datum is not None:
            return non_null[0]
        return (path or "<root>", f"{_show(datum)} matches no branch of the union")
    if isinstance(schema, dict):
        logical = schema.get("logicalType")
        if logical in LOGICAL_TYPES and isinstance(datum, LOGICAL_TYPES[logical]):
            return None
        kind = schema["type"]
        if isinstance(kind, dict | list) or (isinstance(kind, str) and kind in names):
            return _find(kind, datum, path, names)
        if kind in {"record", "error"}:
            return _record(schema, datum, path, names)
        if kind == "array":
            if not isinstance(datum, list | tuple):
                return (path or "<root>", f"expected a list, got {_show(datum)}")
            for i, item in enumerate(datum):
                found = _find(schema["items"], item, f"{path}[{i}]", names)
                if found:
                    return found
            return None
        if kind == "map":
            if not isinstance(datum, Mapping):
                return (path or "<root>", f"expected a mapping, got {_show(datum)}")
            for k, v in datum.items():
                if not isinstance(k, str):
                    return (f"{path}[{k!r}]", "map keys must be strings")
                found = _find(schema["values"], v, f"{path}[{k!r}]", names)
                if found:
                    return found
            return None
        if kind == "enum":
            if datum not in schema["symbols"]:
                return (path or "<root>", f"{_show(datum)} is not one of {schema['symbols']}")
            return None
        if kind == "fixed":
            if not isinstance(datum, bytes) or len(datum) != schema["size"]:
                return (path or "<root>", f"expected {schema['size']} bytes, got {_show(datum)}")
            return None
        return _primitive(kind, datum, path)
    return _primitive(str(schema), datum, path)


def _record(
    schema: dict[str, Any], datum: Any, path: str, names: dict[str, Any]
) -> tuple[str, str] | None:
    if not isinstance(datum, Mapping):
        return (path or "<root>", f"expected a record (a mapping), got {_show(datum)}")
    known = set()
    for f in schema["fields"]:
        name = f["name"]
        known.add(name)
        field_path = f"{path}.{name}" if path else name
        if name not in datum:
            if "default" not in f:
                return (field_path, "missing, and the schema gives no default")
            continue
        found = _find(f["type"], datum[name], field_path, names)
        if found:
            return found
    extra = [k for k in datum if k not in known]
    if extra:
        return (f"{path}.{extra[0]}" if path else str(extra[0]), "not a field of the schema")
    return None


def _primitive(kind: str, datum: Any, path: str) -> tuple[str, str] | None:
    where = path or "<root>"
    ok: bool
    if kind == "null":
        ok = datum is None
    elif kind == "boolean":
        ok = isinstance(datum, bool)
    elif kind in _INT_RANGE:
        lo, hi = _INT_RANGE[kind]
        if isinstance(datum, int) and not isinstance(datum, bool) and not lo <= datum <= hi:
            return (where, f"{datum} does not fit an Avro {kind}")
        ok = isinstance(datum, int) and not isinstance(datum, bool)
    elif kind in {"float", "double"}:
        ok = isinstance(datum, int | float) and not isinstance(datum, bool)
    elif kind == "string":
        ok = isinstance(datum, str)
    elif kind == "bytes":
        ok = isinstance(datum, bytes | bytearray | memoryview)
    else:
        return None
    return None if ok else (where, f"expected {kind}, got {_show(datum)}")


def _show(datum: Any) -> str:
    text = repr(datum)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{type(datum).__name__} {text}"
