"""Avro written and read by a program: the machine that runs what ``streams.codec.compiled``
makes of a schema.

A program is the schema reduced to nested tuples, ``(code, argument)``, every name
resolved and every choice made when it was compiled (which branch of a union is null,
which fields have a default, which logical conversion applies). ``write(program, datum)``
and ``read(program, data)`` walk it; nothing here looks at a schema.

Plain Python, and the contract is this module as written. ``setup.py`` also compiles it
with Cython (see ``streams.speedups``), with C types for the positions, bytes and
varints declared beside it in ``avro_machine.pxd``: the walk then runs as C,
about three times as fast as the plain module. The unit tests run both on generated
schemas and compare them with fastavro.

``write`` raises TypeError, ValueError, KeyError, AttributeError or OverflowError for a
datum that does not fit (the codec then asks ``locate`` which field); ``read`` raises
ValueError, EOFError, IndexError, KeyError, OverflowError, UnicodeDecodeError or
struct.error for bytes that do not fit. Pure functions: thread-safe, never block.
"""

from __future__ import annotations

import struct
from typing import Any

from streams.codec.avro_codes import (
    T_ARRAY,
    T_BOOLEAN,
    T_BYTES,
    T_DOUBLE,
    T_ENUM,
    T_FIXED,
    T_FLOAT,
    T_INT,
    T_LOGICAL,
    T_LONG,
    T_MAP,
    T_NULL,
    T_RECORD,
    T_STRING,
    T_UNION,
)
from streams.codec.varint import INT_MAX, INT_MIN, LONG_MAX, LONG_MIN, read_long

NO_WIDTH = "items of no width: more than a record this size can mean"
"""Part of the message refusing a corrupt count of items that take no bytes."""

_pack_float = struct.Struct("<f").pack
_pack_double = struct.Struct("<d").pack
_unpack_float = struct.Struct("<f").unpack_from
_unpack_double = struct.Struct("<d").unpack_from


# -- writing ---------------------------------------------------------------------------------


def write(program: tuple[int, Any], datum: Any) -> bytes:
    """The Avro encoding of ``datum`` by ``program``."""
    out = bytearray()
    _write(program, datum, out)
    return bytes(out)


def _write(node: tuple[int, Any], value: Any, out: bytearray) -> None:
    code = node[0]
    if code == T_STRING:
        _put_string(value, out)
    elif code in (T_LONG, T_INT):
        if type(value) is not int:
            value = _as_int(value)
        if 0 <= value < 64:
            out.append(value << 1)
        elif code == T_LONG:
            if not LONG_MIN <= value <= LONG_MAX:
                raise OverflowError(f"{value} does not fit an Avro long")
            _put_long(value, out)
        else:
            if not INT_MIN <= value <= INT_MAX:
                raise OverflowError(f"{value} does not fit an Avro int")
            _put_long(value, out)
    elif code == T_RECORD:
        _write_record(node[1], value, out)
    elif code == T_ARRAY:
        n = len(value)
        if n:
            _put_long(n, out)
            item = node[1][0]
            for each in value:
                _write(item, each, out)
        out.append(0)
    elif code == T_UNION:
        null, other = node[1]
        if value is None:
            out.append(null << 1)
        else:
            out.append((1 - null) << 1)
            _write(other, value, out)
    elif code == T_LOGICAL:
        prepare, _, schema, base = node[1]
        _write(base, value if prepare is None else prepare(value, schema), out)
    elif code == T_BOOLEAN:
        out.append(1 if value else 0)
    elif code == T_DOUBLE:
        out += _pack_double(value)
    elif code == T_FLOAT:
        out += _pack_float(value)
    elif code == T_BYTES:
        raw = _as_bytes(value)
        _put_long(len(raw), out)
        out += raw
    elif code == T_MAP:
        n = len(value)
        if n:
            _put_long(n, out)
            for key, each in value.items():
                _put_string(key, out)
                _write(node[1], each, out)
        out.append(0)
    elif code == T_ENUM:
        out += node[1][1][value]
    elif code == T_FIXED:
        raw = _as_bytes(value)
        if len(raw) != node[1]:
            raise ValueError("fixed size")
        out += raw
    elif code == T_NULL:
        if value is not None:
            raise TypeError("expected None")
    else:
        raise ValueError(f"no such node: {code}")


def _write_record(record: list[Any], datum: Any, out: bytearray) -> None:
    fields, names, count = record
    # Fields the schema lacks are refused. Where every field is required, a mapping of as
    # many keys as there are fields holds no other (each is read below, or raises
    # KeyError): the set comparison is made only when the count differs.
    if (count < 0 or len(datum) != count) and not datum.keys() <= names:
        raise ValueError(f"not fields of the schema: {datum.keys() - names!r}")
    for name, node, has_default, default in fields:
        _write(node, datum.get(name, default) if has_default else datum[name], out)


def _put_string(text: Any, out: bytearray) -> None:
    raw = text.encode()
    _put_long(len(raw), out)
    out += raw


def _put_long(n: int, out: bytearray) -> None:
    """The zigzag varint of ``n``, which fits 64 bits."""
    if n >= 0:
        z = n
        z = z << 1
    else:
        z = -(n + 1)  # so that -2**63 fits too
        z = (z << 1) | 1
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z = z >> 7
    out.append(z)


def _as_int(value: Any) -> int:
    if not isinstance(value, int):
        raise TypeError(f"expected int, got {type(value).__name__}")
    return int(value)


def _as_bytes(value: Any) -> bytes:
    if not isinstance(value, (bytes, bytearray)):
        raise TypeError(f"expected bytes, got {type(value).__name__}")
    return bytes(value)


# -- reading ---------------------------------------------------------------------------------


class _Cursor:
    """The bytes being read and the position in them."""

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0
        self.end = len(buf)


def read(program: tuple[int, Any], data: bytes) -> Any:
    """The datum ``data`` holds by ``program``, every byte of it read."""
    cursor = _Cursor(data if type(data) is bytes else bytes(data))
    datum = _read(program, cursor)
    if cursor.pos != cursor.end:
        raise ValueError(f"{cursor.end - cursor.pos} trailing byte(s)")
    return datum


def read_values(program: tuple[int, Any], data: bytes) -> tuple[Any, ...]:
    """The field values of the record ``data`` holds by ``program`` (a record's), in the
    schema's order, every byte read: what ``read`` returns without the dict."""
    cursor = _Cursor(data if type(data) is bytes else bytes(data))
    values = tuple([_read(field, cursor) for _, field, _, _ in program[1][0]])
    if cursor.pos != cursor.end:
        raise ValueError(f"{cursor.end - cursor.pos} trailing byte(s)")
    return values


def _read(node: tuple[int, Any], cursor: _Cursor) -> Any:
    code = node[0]
    if code == T_STRING:
        return _text(cursor)
    if code in (T_LONG, T_INT):
        return _long(cursor)
    if code == T_RECORD:
        datum = {}
        for name, field, _, _ in node[1][0]:
            datum[name] = _read(field, cursor)
        return datum
    if code in (T_ARRAY, T_MAP):
        return _read_blocks(node, cursor)
    if code == T_UNION:
        null, other = node[1]
        index = _long(cursor)
        if index == null:
            return None
        if index == 1 - null:
            return _read(other, cursor)
        raise ValueError(f"union index {index}")
    if code == T_LOGICAL:
        _, convert, schema, base = node[1]
        value = _read(base, cursor)
        return value if convert is None else convert(value, schema, schema)
    if code == T_BOOLEAN:
        flag = cursor.buf[cursor.pos] != 0
        cursor.pos += 1
        return flag
    if code == T_DOUBLE:
        value = _unpack_double(cursor.buf, cursor.pos)[0]
        cursor.pos += 8
        return value
    if code == T_FLOAT:
        value = _unpack_float(cursor.buf, cursor.pos)[0]
        cursor.pos += 4
        return value
    if code == T_BYTES:
        return _take(cursor)
    if code == T_ENUM:
        return node[1][0][_long(cursor)]
    if code == T_FIXED:
        return _slice(cursor, node[1])
    if code == T_NULL:
        return None
    raise ValueError(f"no such node: {code}")


def _read_blocks(node: tuple[int, Any], cursor: _Cursor) -> Any:
    """An array or a map: blocks of items, a count before each, until a count of 0."""
    is_map = node[0] == T_MAP
    items: Any = {} if is_map else []
    item = node[1] if is_map else node[1][0]
    widthless = not is_map and node[1][1]
    while True:
        count = _long(cursor)
        if count == 0:
            return items
        if count < 0:  # a block that gives its size in bytes too
            count = -count
            _long(cursor)
        # Every item takes a byte at least, so more items than bytes left is a truncated
        # or corrupt record, refused at once rather than read to the end. Items of no
        # width (null, fixed(0), records of those) take no bytes, so a corrupt count would
        # fill memory with them: their arrays hold at most 1024 + 8 items per byte.
        if widthless:
            if len(items) + count > 1024 + 8 * cursor.end:
                raise ValueError(f"{count} {NO_WIDTH}")
        elif count > cursor.end - cursor.pos:
            raise EOFError("runs past the end")
        for _ in range(count):
            if is_map:
                key = _text(cursor)
                items[key] = _read(item, cursor)
            else:
                items.append(_read(item, cursor))


def _take(cursor: _Cursor) -> bytes:
    """A length, then that many bytes."""
    return _slice(cursor, _length(cursor))


def _text(cursor: _Cursor) -> str:
    """A length, then that many bytes of UTF-8, decoded where they lie in the buffer: the
    compiled copy makes no bytes object on the way (an envelope and its payload hold a
    dozen strings)."""
    start = _advance(cursor, _length(cursor))
    return cursor.buf[start : cursor.pos].decode("utf-8")


def _slice(cursor: _Cursor, n: int) -> bytes:
    start = _advance(cursor, n)
    return cursor.buf[start : cursor.pos]


def _length(cursor: _Cursor) -> int:
    n = _long(cursor)
    if n < 0:
        raise ValueError("negative length")
    return n


def _advance(cursor: _Cursor, n: int) -> int:
    """Move the cursor past ``n`` bytes; where they start."""
    start = cursor.pos
    if n > cursor.end - start:
        raise EOFError("runs past the end")
    cursor.pos = start + n
    return start


def _long(cursor: _Cursor) -> int:
    """The zigzag varint at the cursor."""
    buf, pos = cursor.buf, cursor.pos
    if pos >= cursor.end:
        raise EOFError("runs past the end")
    x = buf[pos]
    if x < 0x80:
        cursor.pos = pos + 1
        return (x >> 1) ^ -(x & 1)
    # Nine bytes hold 63 bits (a C long long in the compiled copy); a tenth is left to
    # read_long, whose Python ints take any width.
    n = x & 0x7F
    shift = 7
    while shift < 63:
        pos += 1
        if pos >= cursor.end:
            raise EOFError("runs past the end")
        x = buf[pos]
        n |= (x & 0x7F) << shift
        if x < 0x80:
            cursor.pos = pos + 1
            return (n >> 1) ^ -(n & 1)
        shift += 7
    value, cursor.pos = read_long(buf, cursor.pos)
    return value
