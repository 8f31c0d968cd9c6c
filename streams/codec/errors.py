"""The codec's errors. ``decode`` raises only ``DecodeError`` subclasses on bad input.

The runtime sends every ``DecodeError`` straight to the dead-letter topic without
retrying: a record that cannot be decoded now never will be.
"""

from __future__ import annotations

from streams.errors import StreamsError


class CodecError(StreamsError):
    """Base class of every error the codecs raise."""


class DecodeError(CodecError):
    """A record could not be turned into an envelope. Never retried."""


class EmptyRecordError(DecodeError):
    """The record value is empty or null (a tombstone is not an envelope)."""


class MalformedRecordError(DecodeError):
    """The bytes are not an envelope: truncated, garbage, or Avro of another schema."""


class MissingHeaderError(DecodeError):
    """A header the wire format requires is absent."""


class HeaderMismatchError(DecodeError):
    """A header disagrees with the record body (type, version or id)."""


class UnknownTypeError(DecodeError):
    """The record's event type has no schema in the catalog."""


class UnknownVersionError(DecodeError):
    """The writer's (or the requested reader's) version of the type is not in the catalog."""


class NoResolutionPathError(DecodeError):
    """No Avro resolution or upcaster takes the writer's version to the requested one."""


class UpcastError(DecodeError):
    """An upcaster function failed or returned data that does not fit the next version."""


class EncodeError(CodecError):
    """An envelope could not be encoded; ``field`` names the offending field when known."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        self.field = field
        super().__init__(message)


class UnknownSchemaError(EncodeError):
    """The envelope's type or version has no schema in the catalog."""


class BadHeaderError(DecodeError):
    """A header is present but unreadable (not UTF-8, not a number, not an RFC 3339 time)."""


class UnknownSchemaIdError(DecodeError):
    """A Confluent-framed record names a schema id the registry does not have."""


class RegistryError(CodecError):
    """The schema registry failed or could not be reached.

    Deliberately not a DecodeError: the record may be fine, so the runtime must not
    dead-letter it; retry later instead.
    """
