"""The toolkit's error hierarchy: every error a user can meet is a ``StreamsError``."""

from __future__ import annotations


class StreamsError(Exception):
    """Base class of every error raised by Streams on purpose."""


class BrokerError(StreamsError):
    """The local broker could not be fetched, started, stopped or reached."""


class MissingToolError(BrokerError):
    """A program the local broker needs (Java, Maven) is missing or too old."""


class ProduceError(StreamsError):
    """Records written to a topic were not all acknowledged: the broker refused one, or
    the acknowledgements did not come in time (``streams produce``, the test kit)."""
