"""Typed store values: how an aggregation or a table keeps its values as bytes.

A store keeps bytes; a table's values are declared as one of ``PRIMITIVES`` (``long``,
``double``, ``string``, ``boolean``, ``bytes``) or as a payload type of the schema catalog
at a version (schemaless Avro of that schema), and read back as Python values.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streams.topology.errors import TopologyError

if TYPE_CHECKING:
    from streams.codec.payload import Payloads

_LONG = struct.Struct(">q")
_DOUBLE = struct.Struct(">d")

Encode = Callable[[Any], bytes]
Decode = Callable[[bytes], Any]


def _bool(raw: bytes) -> bool:
    return raw == b"\x01"


PRIMITIVES: dict[str, tuple[Encode, Decode]] = {
    "long": (_LONG.pack, lambda raw: _LONG.unpack(raw)[0]),
    "double": (_DOUBLE.pack, lambda raw: _DOUBLE.unpack(raw)[0]),
    "string": (str.encode, bytes.decode),
    "boolean": (lambda v: b"\x01" if v else b"\x00", _bool),
    "bytes": (bytes, bytes),
}
"""Values a store may hold without a schema, by name."""


def value_codec(
    type_: str, version: int | None, payloads: Payloads | None
) -> tuple[Encode, Decode]:
    """How values of ``type_`` are stored: a primitive's bytes, or schemaless Avro of the
    catalog's ``type_``@``version`` (its writer schema: a new version needs a new store)."""
    primitive = PRIMITIVES.get(type_)
    if primitive is not None:
        return primitive
    if version is None:
        raise TopologyError(f"value type {type_!r} is no primitive: give its catalog version")
    if payloads is None:
        from streams.codec.payload import Payloads  # noqa: PLC0415 - only for catalog types
        from streams.schemas import default_catalog  # noqa: PLC0415

        payloads = Payloads(default_catalog())
    found = payloads

    def encode(value: Any) -> bytes:
        return found.encode(type_, version, value)

    def decode(raw: bytes) -> Any:
        return found.decode(type_, version, raw, version)

    return encode, decode
