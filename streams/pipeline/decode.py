"""Reading a source record: the one decode path of the runtime and the test driver.

``Decode`` turns a record's bytes into the envelope its input topic's source declares;
the failure policy's attempt calls it for each record.
"""

from __future__ import annotations

from collections.abc import Mapping

from streams.codec import Codec, DecodeError, peek_type
from streams.codec.headers import Headers
from streams.envelope import Envelope, Tombstone
from streams.pipeline.record import Record
from streams.topology.nodes import ANY_TYPE, SourceNode


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

    __slots__ = ("_codec", "_reads", "_reads_headers", "_sources")

    def __init__(self, codec: Codec, sources: Mapping[str, SourceNode]) -> None:
        self._codec = codec
        self._sources = dict(sources)
        # The versions of each source of several types, by type (made once, read per record).
        self._reads = {topic: s.reads for topic, s in self._sources.items() if s.also}
        # A codec whose values carry all the metadata says so (``reads_headers = False``):
        # then the headers are never asked of the message (see ``Record.headers``).
        self._reads_headers = getattr(codec, "reads_headers", True)

    def __call__(self, record: Record) -> Envelope:
        if record.envelope is not None:  # decoded already (``TimeOrder`` read its time)
            return record.envelope
        source = self._sources[record.source_topic]
        if source.table and record.value is None:  # a table's tombstone: the key deleted
            key = record.key.decode() if record.key is not None else None
            deleted = record.envelope = Tombstone(source.type, {}, source.version, key)
            return deleted
        headers = record.headers if self._reads_headers else None
        if source.type == ANY_TYPE:  # a repartition topic: any envelope, as it was written
            env = record.envelope = self._codec.decode(record.value, headers, lazy=True)
            return env
        if source.also:
            return self._one_of(source, self._reads[record.source_topic], record, headers)
        try:
            env = self._codec.decode(record.value, headers, version=source.version, lazy=True)
        except DecodeError:
            found = peek_type(record.headers)
            if found is not None and found[0] != source.type:
                raise UnexpectedTypeError(
                    f"source {source.name!r} reads {source.type}, "
                    f"got a record of {found[0]}@{found[1]}"
                ) from None
            raise
        if env.type != source.type:
            raise UnexpectedTypeError(
                f"source {source.name!r} reads {source.type}, got a record of {env.type}"
            )
        record.envelope = env
        return env

    def _one_of(
        self, source: SourceNode, reads: dict[str, int], record: Record, headers: Headers | None
    ) -> Envelope:
        """A record of a source of several types: read as written, then at the reader
        version of its type when the writer's is another."""
        env = self._codec.decode(record.value, headers, lazy=True)
        version = reads.get(env.type)
        if version is None:
            raise UnexpectedTypeError(
                f"source {source.name!r} reads {source.label}, got a record of {env.type}"
            )
        if env.version != version:
            env = self._codec.decode(record.value, headers, version=version, lazy=True)
        record.envelope = env
        return env
