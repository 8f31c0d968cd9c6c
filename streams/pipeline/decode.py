"""Reading a source record: the one decode path the runtime and the test driver share."""

from __future__ import annotations

from streams.codec import Codec, DecodeError, peek_type
from streams.codec.headers import Headers
from streams.envelope import Envelope
from streams.topology.nodes import SourceNode


class UnexpectedTypeError(DecodeError):
    """A source read an envelope of another type than the one it declares."""


def decode_source(
    codec: Codec, source: SourceNode, value: bytes | None, headers: Headers | None
) -> Envelope:
    """The record as ``source.type`` at the source's reader version.

    Raises DecodeError (never anything else) for bytes that are not an envelope, a schema
    the catalog lacks, or an envelope of another type. The happy path decodes once; the
    headers are consulted only to explain a failure (a stray type usually fails to resolve
    to the source's version before its type can be compared)."""
    try:
        env = codec.decode(value, headers, version=source.version)
    except DecodeError:
        found = peek_type(headers)
        if found is not None and found[0] != source.type:
            raise UnexpectedTypeError(
                f"source {source.name!r} reads {source.type}, got a record of {found[0]}@{found[1]}"
            ) from None
        raise
    if env.type != source.type:
        raise UnexpectedTypeError(
            f"source {source.name!r} reads {source.type}, got a record of {env.type}"
        )
    return env
