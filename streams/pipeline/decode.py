"""Reading a source record: the one decode path of the runtime and the test driver.

``decode_source`` turns a record's bytes into the envelope its source declares, at the
source's reader version (older and newer writers resolved by Avro's rules, upcasters
applied by the codec). ``Decode`` is that function bound to a topology's sources, as the
failure policy's attempt calls it for each record.
"""

from __future__ import annotations

from collections.abc import Mapping

from streams.codec import Codec, DecodeError, peek_type
from streams.codec.headers import Headers
from streams.envelope import Envelope
from streams.pipeline.record import Record
from streams.topology.nodes import SourceNode


class UnexpectedTypeError(DecodeError):
    """A source read an envelope of another type than the one it declares."""


def decode_source(
    codec: Codec,
    source: SourceNode,
    value: bytes | None,
    headers: Headers | None,
    *,
    lazy: bool = False,
) -> Envelope:
    """The record as ``source.type`` at the source's reader version (with ``lazy``, its
    payload decoded when first read: see ``Codec.decode``).

    Raises DecodeError (never anything else) for bytes that are not an envelope, a schema
    the catalog lacks, or an envelope of another type. The happy path decodes once; the
    headers are consulted only to explain a failure (a stray type usually fails to resolve
    to the source's version before its type can be compared)."""
    try:
        env = codec.decode(value, headers, version=source.version, lazy=lazy)
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


class Decode:
    """Decodes a record as its input topic's source declares; raises ``DecodeError``.

    The payload is left for the first step that reads ``data`` (a step that routes on the
    metadata never pays for it, and an envelope passed on unchanged is written from its
    original bytes); its decode errors are the attempt's decode failures all the same."""

    __slots__ = ("_codec", "_sources")

    def __init__(self, codec: Codec, sources: Mapping[str, SourceNode]) -> None:
        self._codec = codec
        self._sources = dict(sources)

    def __call__(self, record: Record) -> Envelope:
        env = decode_source(
            self._codec,
            self._sources[record.source_topic],
            record.value,
            record.headers,
            lazy=True,
        )
        record.envelope = env
        return env
