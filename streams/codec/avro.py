"""Streams' wire format: the Avro envelope record in the value, three headers to route on.

Value: schemaless Avro of ``schemas/envelope.avsc``, whose ``data`` field is the
schemaless Avro of ``schemas/<type>/v<version>.avsc``. Headers (CloudEvents Kafka binding
names: ``streams.codec.headers``): ``ce_id``, ``ce_type`` and ``ce_dataversion``, what
tools route and filter on without decoding. The value is the authority: a reader that has
it needs no header. The README's "Wire format" section is the full description.

Why the metadata lives in the value (CloudEvents' structured mode, with our own record)
rather than in headers alone (binary mode), measured: confluent-kafka turns a consumed
record's headers into Python objects at about 4 µs for the first and 0.25 µs for each
more, on every record whose headers are asked for, and a produced header costs about
0.25 µs. The runtime never asks (``decode`` with ``lazy``), so a record costs one read of
a small Avro record instead, and writes three headers.

Payloads are written and read by functions compiled from their schemas
(``streams.codec.compiled``; fastavro where a schema is not covered, and for resolution
between versions). With ``lazy``, the payload is decoded when ``data`` is first read, and
an envelope passed on unchanged is written with its original value.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from io import BytesIO
from typing import Any

from fastavro import schemaless_writer

from streams.codec import headers as h
from streams.codec.base import KafkaHeaders
from streams.codec.compiled import compile_reader, compile_writer
from streams.codec.envelope_wire import envelope_value, read_fields, type_version_bytes
from streams.codec.errors import (
    EmptyRecordError,
    EncodeError,
    HeaderMismatchError,
    MalformedRecordError,
    MissingHeaderError,
)
from streams.codec.payload import Payloads, encode_error, read_exact
from streams.codec.upcast import Upcasters
from streams.envelope import (
    Envelope,
    WireEnvelope,
    envelope_from_fields,
    held_micros,
    wire_envelope,
)
from streams.schemas.catalog import SchemaCatalog

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Read = Callable[[bytes], Any]


class _TypeInfo:
    """What encode and decode need per (type, version), built once: the parsed schema, its
    compiled writer and reader (fastavro where the schema is not covered), the envelope's
    encoded type and version fields, the header pairs that never change, and the readers
    of its payloads by target version."""

    __slots__ = (
        "own",
        "readers",
        "schema",
        "type",
        "type_bytes",
        "type_name",
        "type_version",
        "version",
        "version_bytes",
        "write",
        "writer",
    )

    def __init__(self, type_: str, version: int, schema: Any) -> None:
        self.schema = schema
        self.type_name = type_
        self.writer = version
        # the envelope's encoded type and version fields (only encode needs them)
        self.type_version = type_version_bytes(type_, version) if schema is not None else b""
        self.type_bytes = type_.encode()
        self.version_bytes = str(version).encode()
        self.type = (h.TYPE, self.type_bytes)
        self.version = (h.DATAVERSION, self.version_bytes)
        self.readers: dict[int | None, Read] = {}
        self.write: Callable[[Any], bytes] = _fastavro_writer(schema)
        self.own: Read = _fastavro_reader(schema, type_, version)
        if schema is not None:
            self.write = compile_writer(schema) or self.write
            compiled = compile_reader(schema)
            if compiled is not None:
                self.own = _exact(compiled, type_, version)


class AvroCodec:
    """Envelopes in Streams' own Avro wire format. Thread-safe; never blocks.

    ``require_headers`` (default True): ``decode`` given no ``ce_id``/``ce_type``/
    ``ce_dataversion`` headers raises ``MissingHeaderError``. When False, headers that are
    present are still checked against the value. ``decode(..., lazy=True)`` (the
    runtime's) reads no header at all.
    """

    reads_headers = False  # with ``lazy``: the value is the authority (see ``Codec``)

    def __init__(
        self,
        catalog: SchemaCatalog,
        *,
        upcasters: Upcasters | None = None,
        require_headers: bool = True,
    ) -> None:
        self.catalog = catalog
        self.payloads = Payloads(catalog, upcasters)
        self.require_headers = require_headers
        self._envelope = catalog.envelope
        # The catalog is immutable: everything per (type, version) is prepared up front,
        # so the hot path is one dict lookup.
        self._info = {key: _TypeInfo(*key, schema) for key, schema in catalog.schema_map().items()}

    # -- encode ----------------------------------------------------------------------------

    def encode(self, env: Envelope) -> tuple[bytes, KafkaHeaders]:
        """``(value, headers)`` for ``env``. Raises EncodeError naming the field that fails.

        An envelope this codec read lazily, passed on with its payload never read, is
        written with its original value."""
        info = self._info.get((env.type, env.version))
        if info is None:
            raise self.payloads.unknown_schema(env.type, env.version)
        try:
            value = env.untouched_value() if type(env) is WireEnvelope else None
            if value is None:
                try:
                    # Fields the schema lacks are refused: a misspelt one must not vanish.
                    data = info.write(env.data)
                except Exception as exc:  # TypeError/ValueError/OverflowError/KeyError...
                    raise encode_error(env.type, env.version, info.schema, env.data, exc) from exc
                # The envelope record by hand (same bytes as fastavro's writer).
                value = envelope_value(env, data, info.type_version, held_micros(env))
            return value, self._headers(env, info)
        except EncodeError:
            raise
        except Exception as exc:
            raise _envelope_error(env, exc) from exc

    def headers(self, env: Envelope) -> KafkaHeaders:
        """The Kafka headers of ``env``: ``ce_id``, ``ce_type``, ``ce_dataversion``."""
        info = self._info.get((env.type, env.version))
        return self._headers(env, info or _TypeInfo(env.type, env.version, None))

    @staticmethod
    def _headers(env: Envelope, info: _TypeInfo) -> KafkaHeaders:
        return [(h.ID, env.id.encode()), info.type, info.version]

    # -- decode ----------------------------------------------------------------------------

    def decode(
        self,
        value: bytes | None,
        headers: h.Headers | None = None,
        *,
        version: int | None = None,
        lazy: bool = False,
    ) -> Envelope:
        """The envelope in ``value``, its payload as version ``version`` (None: as written).

        ``lazy`` (the runtime's): the headers are not read (the value is the authority)
        and the payload is decoded when ``data`` is first read (a ``WireEnvelope``: its
        decode errors are raised there). Raises only DecodeError subclasses:
        EmptyRecordError, MalformedRecordError, MissingHeaderError, HeaderMismatchError,
        UnknownTypeError, UnknownVersionError, NoResolutionPathError, UpcastError.
        """
        if not value:
            raise EmptyRecordError("empty record value: not an envelope")
        try:
            # The envelope record by hand (what fastavro's reader returns, in less time).
            fields = read_fields(value)
        except Exception as exc:  # garbage: EOFError, UnicodeDecodeError, ValueError, ...
            raise MalformedRecordError(
                f"not a Streams envelope ({len(value)} bytes; {type(exc).__name__}: {exc})"
            ) from None
        id_, type_, writer, when, source, key, correlation, causation, data = fields
        info = self._info.get((type_, writer))
        if not lazy:
            found: dict[str, h.HeaderValue] = dict(headers) if headers else {}
            if (
                info is None
                or found.get(h.TYPE) != info.type_bytes
                or found.get(h.DATAVERSION) != info.version_bytes
                or found.get(h.ID) != id_.encode()
            ):
                self._check_headers(found, id_, type_, writer)  # raises, unless absent may be
        if info is None:  # raises the precise error (unknown type or version)
            self.payloads.decode(type_, writer, data, version)
            raise MalformedRecordError(f"no schema for {type_}@{writer}")
        read = info.readers.get(version)
        if read is None:
            read = self._reader(info, version)
        target = writer if version is None else version
        if lazy:
            return wire_envelope(value, fields, read, target)
        time = _EPOCH + timedelta(microseconds=when)
        return envelope_from_fields(
            type_, read(data), target, key, id_, time, source, correlation, causation
        )

    def peek_type(self, headers: h.Headers | None) -> tuple[str, int] | None:
        return h.peek_type(headers)

    def _reader(self, info: _TypeInfo, target: int | None) -> Read:
        """The function reading payloads of ``info``'s version as ``target`` (cached)."""
        type_, writer = info.type_name, info.writer
        if target is None or target == writer:
            read = info.own
        else:
            payloads = self.payloads
            payloads.decode_plan(type_, writer, target)  # raises NoResolutionPathError now

            def read(data: bytes) -> Any:
                return payloads.decode(type_, writer, data, target)

        info.readers[target] = read
        return read

    def _check_headers(
        self, found: dict[str, h.HeaderValue], id_: str, type_: str, version: int
    ) -> None:
        """The slow path: say which header is missing or disagrees (or accept none at all)."""
        type_b = h.as_bytes(found.get(h.TYPE))
        version_b = h.as_bytes(found.get(h.DATAVERSION))
        id_b = h.as_bytes(found.get(h.ID))
        if type_b is None or version_b is None or id_b is None:
            if not self.require_headers and type_b is None and version_b is None and id_b is None:
                return
            missing = [
                n
                for n, v in ((h.TYPE, type_b), (h.DATAVERSION, version_b), (h.ID, id_b))
                if v is None
            ]
            raise MissingHeaderError(
                f"record {id_} ({type_}@{version}) lacks header(s) {', '.join(missing)}"
            )
        if type_b != type_.encode():
            raise _mismatch(h.TYPE, type_b, type_)
        if version_b != str(version).encode():
            raise _mismatch(h.DATAVERSION, version_b, version)
        if id_b != id_.encode():
            raise _mismatch(h.ID, id_b, id_)


def _fastavro_writer(schema: Any) -> Callable[[Any], bytes]:
    def write(data: Any) -> bytes:
        buf = BytesIO()
        schemaless_writer(buf, schema, data, strict_allow_default=True)
        return buf.getvalue()

    return write


def _fastavro_reader(schema: Any, type_: str, version: int) -> Read:
    def read(data: bytes) -> Any:
        return read_exact(data, schema, None, type_, version)

    return read


def _exact(read: Read, type_: str, version: int) -> Read:
    """``read`` raising ``MalformedRecordError`` (as ``read_exact`` does) on bad bytes."""

    def checked(data: bytes) -> Any:
        try:
            return read(data)
        except Exception as exc:  # garbage makes a reader raise many types
            raise MalformedRecordError(
                f"{type_}@{version} payload is not valid Avro of its schema "
                f"({type(exc).__name__}: {exc})"
            ) from None

    return checked


def _mismatch(name: str, header: bytes | None, body: object) -> HeaderMismatchError:
    shown = header.decode(errors="replace") if header is not None else None
    return HeaderMismatchError(f"header {name}={shown!r} disagrees with the body's {body!r}")


def _envelope_error(env: Envelope, exc: Exception) -> EncodeError:
    checks: list[tuple[str, bool]] = [
        ("id", isinstance(env.id, str)),
        ("type", isinstance(env.type, str)),
        ("version", isinstance(env.version, int) and 0 < env.version < 2**31),
        ("source", isinstance(env.source, str)),
        ("key", env.key is None or isinstance(env.key, str)),
        ("correlation_id", env.correlation_id is None or isinstance(env.correlation_id, str)),
        ("causation_id", env.causation_id is None or isinstance(env.causation_id, str)),
    ]
    for name, ok in checks:
        if not ok:
            return EncodeError(f"envelope field '{name}' is invalid: {exc}", field=name)
    return EncodeError(f"envelope field 'time' is invalid: {exc}", field="time")
