"""Reading a source record: the one decode path of the runtime and the test driver.

``Decode`` turns a record's bytes into the envelope its input topic's source declares;
the failure policy's attempt calls it for each record. What a topic's records need is
settled once, at build time: each input topic gets its own decoder function (a source of
one type, of several types, of any type, a table's), so a record pays for its own
source's reading and for no question about it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from streams.codec import Codec, DecodeError, peek_type
from streams.envelope import Envelope, Tombstone
from streams.pipeline.record import Record
from streams.topology.nodes import ANY_TYPE, SourceNode

Decoder = Callable[[Record], Envelope]
"""Reads one record of a topic as the topic's source declares (see ``Decode``)."""


class UnexpectedTypeError(DecodeError):
    """A source read an envelope of another type than the one it declares."""


class Decode:
    """Decodes a record as its input topic's source declares, at the source's reader
    version (older and newer writers resolved by Avro's rules, upcasters applied by the
    codec).

    Raises DecodeError (never anything else) for bytes that are not an envelope, a schema
    the catalog lacks, or an envelope of another type. The happy path reads the value once
    and no header; the headers are consulted only to explain a failure (a stray type
    usually fails to resolve to the source's version before its type can be compared).
    The payload is left for the first step that reads ``data`` (a step that routes on the
    metadata never pays for it, and an envelope passed on unchanged is written as it came
    in); its decode errors are the attempt's decode failures all the same."""

    __slots__ = ("_decoders",)

    def __init__(self, codec: Codec, sources: Mapping[str, SourceNode]) -> None:
        # A codec whose values carry all the metadata says so (``reads_headers = False``):
        # then the headers are never asked of the message (see ``Record.headers``).
        reads_headers = getattr(codec, "reads_headers", True)
        self._decoders: dict[str, Decoder] = {
            topic: _decoder(codec, source, reads_headers=reads_headers)
            for topic, source in sources.items()
        }

    def __call__(self, record: Record) -> Envelope:
        env = record.envelope
        if env is not None:  # decoded already (``TimeOrder`` read its time)
            return env
        env = record.envelope = self._decoders[record.origin_topic](record)
        return env


def _decoder(codec: Codec, source: SourceNode, *, reads_headers: bool) -> Decoder:
    """The decoder of ``source``'s topic: chosen here once for all its records."""
    if source.type == ANY_TYPE:
        read = _as_written(codec, reads_headers=reads_headers)
    elif source.also:
        read = _one_of(codec, source, reads_headers=reads_headers)
    else:
        read = _of_type(codec, source, reads_headers=reads_headers)
    return _or_tombstone(source, read) if source.table else read


def _as_written(codec: Codec, *, reads_headers: bool) -> Decoder:
    """A repartition topic's: any envelope, as it was written."""
    decode = codec.decode

    def as_written(record: Record) -> Envelope:
        return decode(record.value, record.headers if reads_headers else None, lazy=True)

    return as_written


def _of_type(codec: Codec, source: SourceNode, *, reads_headers: bool) -> Decoder:
    """A source of one type: read at its reader version, the type checked."""
    decode, expected, version, name = codec.decode, source.type, source.version, source.name

    def of_type(record: Record) -> Envelope:
        headers = record.headers if reads_headers else None
        try:
            env = decode(record.value, headers, version=version, lazy=True)
        except DecodeError:
            found = peek_type(record.headers)
            if found is not None and found[0] != expected:
                raise UnexpectedTypeError(
                    f"source {name!r} reads {expected}, got a record of {found[0]}@{found[1]}"
                ) from None
            raise
        if env.type != expected:
            raise UnexpectedTypeError(
                f"source {name!r} reads {expected}, got a record of {env.type}"
            )
        return env

    return of_type


def _one_of(codec: Codec, source: SourceNode, *, reads_headers: bool) -> Decoder:
    """A source of several types: read as written, then at the reader version of its
    type when the writer's is another."""
    decode, reads, name, label = codec.decode, source.reads, source.name, source.label

    def one_of(record: Record) -> Envelope:
        headers = record.headers if reads_headers else None
        env = decode(record.value, headers, lazy=True)
        version = reads.get(env.type)
        if version is None:
            raise UnexpectedTypeError(f"source {name!r} reads {label}, got a record of {env.type}")
        if env.version != version:
            env = decode(record.value, headers, version=version, lazy=True)
        return env

    return one_of


def _or_tombstone(source: SourceNode, read: Decoder) -> Decoder:
    """A table's topic: a record without a value is a tombstone (its key deleted)."""
    type_, version = source.type, source.version

    def or_tombstone(record: Record) -> Envelope:
        if record.value is None:
            key = record.key.decode() if record.key is not None else None
            return Tombstone(type_, {}, version, key)
        return read(record)

    return or_tombstone
