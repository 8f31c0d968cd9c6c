"""Avro's zigzag varints (``int`` and ``long``), both ways: the primitive every hand-written
or compiled Avro path shares. Byte for byte what fastavro writes and reads."""

from __future__ import annotations

LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
SMALL = [bytes([n << 1]) for n in range(64)]
"""The varints of 0..63: one byte each (most lengths, every union index)."""


def long_bytes(n: int) -> bytes:
    """Avro ``long``: zigzag, then a little-endian base-128 varint. OverflowError when
    ``n`` does not fit 64 bits."""
    if 0 <= n < 64:
        return SMALL[n]
    if not LONG_MIN <= n <= LONG_MAX:
        raise OverflowError(f"{n} does not fit an Avro long")
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append(z & 0x7F | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def int_bytes(n: int) -> bytes:
    """Avro ``int``: a long that fits 32 bits."""
    if not INT_MIN <= n <= INT_MAX:
        raise OverflowError(f"{n} does not fit an Avro int")
    return long_bytes(n)


_U64 = (1 << 64) - 1


def read_long(buf: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``pos``: (value, next position). IndexError past the end, ValueError
    for a varint longer than 10 bytes."""
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    n = b & 0x7F
    shift = 7
    while True:
        pos += 1
        b = buf[pos]
        n |= (b & 0x7F) << shift
        if b < 0x80:
            # A tenth byte carries bits past the 64 a long has: dropped, as fastavro's C
            # reader drops them (a corrupt record reads as it does, never out of range).
            n &= _U64
            return (n >> 1) ^ -(n & 1), pos + 1
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")
