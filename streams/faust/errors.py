"""The errors of the Faust interop.

``FaustInteropError`` and its subclasses are ``StreamsError``s: a misconfigured app is
told in one line. ``BadEnvelopeError`` is also Faust's own ``ValueDecodeError``: Faust's
conductor acks the record it is raised for (the offset moves past it) and hands it to the
topic's ``on_value_decode_error``, which an ``EnvelopeTopic`` answers without crashing the
agent (the record was already dead-lettered or logged when it is raised).
"""

from __future__ import annotations

from faust.exceptions import ValueDecodeError

from streams.codec.errors import DecodeError
from streams.errors import StreamsError


class FaustInteropError(StreamsError):
    """A Faust app is set up in a way the interop cannot serve."""


class ConfluentTransportError(FaustInteropError):
    """The app uses Faust's confluent transport, which drops record headers."""


class EnvelopeTopicError(FaustInteropError):
    """An ``EnvelopeSchema`` is used on a plain ``faust.Topic`` (bad input would crash the
    agent), or an envelope sent to a topic is not of the type its schema declares."""


class BadEnvelopeError(ValueDecodeError):
    """A record of an envelope topic could not be decoded; already dead-lettered or skipped.

    ``error`` is the codec's ``DecodeError`` (or the type mismatch) that says why."""

    def __init__(self, error: StreamsError) -> None:
        super().__init__(str(error))
        self.error = error


class WrongTypeError(DecodeError):
    """A record holds an envelope of another type than its topic's schema declares: a
    decode error like the codec's (the record goes to the DLQ, never retried)."""
