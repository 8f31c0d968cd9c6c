"""Kafka headers mirroring envelope metadata, with CloudEvents Kafka binding names.

Tools route and filter on these without decoding the body (``peek_type``).
"""

from __future__ import annotations

from collections.abc import Sequence

SPECVERSION = "ce_specversion"
ID = "ce_id"
TYPE = "ce_type"
SOURCE = "ce_source"
TIME = "ce_time"
DATASCHEMA = "ce_dataschema"
# CloudEvents extension attributes (lower-case alphanumerics, as the spec requires).
DATAVERSION = "ce_dataversion"
CORRELATION_ID = "ce_correlationid"
CAUSATION_ID = "ce_causationid"

SPECVERSION_VALUE = b"1.0"

Headers = Sequence[tuple[str, bytes | None]]


def header_value(headers: Headers | None, name: str) -> bytes | None:
    """The first value of header ``name``, or None. Linear: headers are a handful."""
    if headers:
        for k, v in headers:
            if k == name:
                return v
    return None


def peek_type(headers: Headers | None) -> tuple[str, int] | None:
    """``(type, version)`` from the headers alone, without decoding the value.

    None when either header is absent or unreadable: the caller then decodes (and gets a
    typed error if the record is bad). Never raises.
    """
    if not headers:
        return None
    type_b = version_b = None
    for k, v in headers:
        if k == TYPE:
            type_b = v
        elif k == DATAVERSION:
            version_b = v
    if not type_b or not version_b:
        return None
    try:
        return type_b.decode(), int(version_b)
    except (UnicodeDecodeError, ValueError):
        return None
