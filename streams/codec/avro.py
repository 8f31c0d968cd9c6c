"""Streams' wire format: CloudEvents binary content mode, the payload in Avro.

Value: the schemaless Avro of the payload, ``schemas/<type>/v<version>.avsc``, nothing
else. Headers: the envelope's metadata, each once (CloudEvents Kafka binding names,
``streams.codec.headers``), with ``content-type: application/avro``. Why binary mode: the
metadata travels once (no copy in the value to write and cross-check on every read),
routing and filtering read headers only, the payload is plain Avro any client reads with
the ``.avsc`` file, and a record passed on unchanged keeps its payload bytes.

Decoding also reads the earlier format (no ``content-type`` header: the value is the Avro
envelope record of ``schemas/envelope.avsc`` holding the payload, headers mirroring it),
so topics, DLQs and replays written before keep working. The README's "Wire format"
section is the full description.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from io import BytesIO
from typing import Any

from fastavro import schemaless_writer

from streams.codec import headers as h
from streams.codec.base import KafkaHeaders
from streams.codec.errors import (
    EmptyRecordError,
    EncodeError,
    HeaderMismatchError,
    MalformedRecordError,
    MissingHeaderError,
)
from streams.codec.payload import Payloads, encode_error, read_exact
from streams.codec.structured import read_structured
from streams.codec.upcast import Upcasters
from streams.envelope import Envelope, WireEnvelope, envelope_from_fields, wire_envelope
from streams.schemas.catalog import SchemaCatalog

_SPEC_HEADER = (h.SPECVERSION, h.SPECVERSION_VALUE)
_CONTENT_HEADER = (h.CONTENT_TYPE, h.AVRO)
_TEXT_CACHE_MAX = 1024
_REQUIRED = (h.ID, h.TYPE, h.DATAVERSION, h.SOURCE, h.TIME)

Read = Callable[[bytes], Any]


class _TypeInfo:
    """What encode and decode need per (type, version), built once: the parsed schema, the
    header pairs that never change, and the readers of its payloads by target version."""

    __slots__ = ("dataschema", "readers", "schema", "type", "type_name", "version", "writer")

    def __init__(self, type_: str, version: int, schema: Any) -> None:
        self.schema = schema
        self.type_name = type_
        self.writer = version
        self.type = (h.TYPE, type_.encode())
        self.version = (h.DATAVERSION, str(version).encode())
        self.dataschema = (h.DATASCHEMA, f"schemas/{type_}/v{version}.avsc".encode())
        self.readers: dict[int | None, Read] = {}


class AvroCodec:
    """Envelopes in Streams' own wire format. Thread-safe; never blocks.

    ``require_headers`` concerns records of the earlier format only (their headers mirror
    the value; when False, a record without them is read from its value alone, and headers
    that are present are still checked). The current format's metadata is its headers.
    """

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
        # The catalog is immutable: everything per (type, version) is prepared up front,
        # so the hot path is dict lookups, by name (encode) or by header bytes (decode).
        self._info = {key: _TypeInfo(*key, schema) for key, schema in catalog.schema_map().items()}
        self._by_headers: dict[tuple[Any, Any], _TypeInfo] = {
            (i.type[1], i.version[1]): i for i in self._info.values()
        }
        self._text: dict[bytes, str] = {}  # header bytes seen again and again: sources
        self._sources: dict[str, tuple[str, bytes]] = {}
        self._times: dict[tuple[int, int, int, int, int, int], str] = {}

    # -- encode ----------------------------------------------------------------------------

    def encode(self, env: Envelope) -> tuple[bytes, KafkaHeaders]:
        """``(value, headers)`` for ``env``. Raises EncodeError naming the field that fails.

        An envelope read by this codec and passed on with its payload never read is written
        with its original payload bytes."""
        info = self._info.get((env.type, env.version))
        if info is None:
            raise self.payloads.unknown_schema(env.type, env.version)
        value = env.untouched_payload() if type(env) is WireEnvelope else None
        if value is None:
            buf = BytesIO()
            try:
                # Fields the schema lacks are refused: a misspelt one must not vanish.
                schemaless_writer(buf, info.schema, env.data, strict_allow_default=True)
            except Exception as exc:  # fastavro raises TypeError/ValueError/OverflowError...
                raise encode_error(env.type, env.version, info.schema, env.data, exc) from exc
            value = buf.getvalue()
        try:
            return value, self._headers(env, info)
        except Exception as exc:
            raise _envelope_error(env, exc) from exc

    def headers(self, env: Envelope) -> KafkaHeaders:
        """The Kafka headers that carry ``env``'s metadata."""
        info = self._info.get((env.type, env.version))
        return self._headers(env, info or _TypeInfo(env.type, env.version, None))

    def _headers(self, env: Envelope, info: _TypeInfo) -> KafkaHeaders:
        source = self._sources.get(env.source)
        if source is None:
            if len(self._sources) >= _TEXT_CACHE_MAX:
                self._sources.clear()
            source = self._sources[env.source] = (h.SOURCE, env.source.encode())
        out = [
            _SPEC_HEADER,
            (h.ID, env.id.encode()),
            source,
            info.type,
            (h.TIME, self._time(env.time)),
            _CONTENT_HEADER,
            info.dataschema,
            info.version,
        ]
        if env.key is not None:
            out.append((h.PARTITIONKEY, env.key.encode()))
        if env.correlation_id is not None:
            out.append((h.CORRELATION_ID, env.correlation_id.encode()))
        if env.causation_id is not None:
            out.append((h.CAUSATION_ID, env.causation_id.encode()))
        return out

    def _time(self, when: datetime) -> bytes:
        """RFC 3339 in UTC with microseconds; the part up to the second is cached (records
        of one second share it). A naive time is taken as UTC."""
        if when.tzinfo is not UTC:
            when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
        second = (when.year, when.month, when.day, when.hour, when.minute, when.second)
        prefix = self._times.get(second)
        if prefix is None:
            if len(self._times) >= _TEXT_CACHE_MAX:
                self._times.clear()
            prefix = self._times[second] = when.strftime("%Y-%m-%dT%H:%M:%S")
        return f"{prefix}.{when.microsecond:06d}+00:00".encode()

    # -- decode ----------------------------------------------------------------------------

    def decode(
        self,
        value: bytes | None,
        headers: h.Headers | None = None,
        *,
        version: int | None = None,
        lazy: bool = False,
    ) -> Envelope:
        """The envelope in a record, its payload as version ``version`` (None: as written).

        ``lazy``: the payload is decoded when ``data`` is first read (a ``WireEnvelope``:
        its decode errors are raised there); metadata is read and checked at once.
        Raises only DecodeError subclasses: EmptyRecordError, MalformedRecordError,
        MissingHeaderError, HeaderMismatchError, UnknownTypeError, UnknownVersionError,
        NoResolutionPathError, UpcastError.
        """
        if not value:
            raise EmptyRecordError("empty record value: not an envelope")
        found: dict[str, Any] = dict(headers) if headers else {}
        if found.get(h.CONTENT_TYPE) not in h.AVRO_VALUES:
            return self._decode_structured(value, found, version)
        info = self._by_headers.get((found.get(h.TYPE), found.get(h.DATAVERSION)))
        if info is None:  # text values, or a type the catalog lacks: the slow path
            found = {name: h.as_bytes(v) for name, v in found.items()}
            info = self._by_headers.get((found.get(h.TYPE), found.get(h.DATAVERSION)))
            if info is None:
                info = self._resolve_type(found)
        read = info.readers.get(version)
        if read is None:
            read = self._reader(info, version)
        try:
            id_ = found[h.ID].decode()
            time = datetime.fromisoformat(found[h.TIME].decode())
            source = self._decoded(found[h.SOURCE])
            key = found.get(h.PARTITIONKEY)
            correlation_id = found.get(h.CORRELATION_ID)
            causation_id = found.get(h.CAUSATION_ID)
            metadata = (
                info.writer if version is None else version,
                None if key is None else h.text(key),
                id_,
                time if time.tzinfo is not None else time.replace(tzinfo=UTC),
                source,
                None if correlation_id is None else h.text(correlation_id),
                None if causation_id is None else h.text(causation_id),
            )
        except KeyError as exc:
            raise MissingHeaderError(
                f"{info.type_name}@{info.writer} record lacks header {exc.args[0]}"
            ) from None
        except (ValueError, AttributeError) as exc:  # not UTF-8, not a time, not bytes
            raise MalformedRecordError(f"unreadable envelope header: {exc}") from None
        if lazy:
            return wire_envelope(info.type_name, value, read, info.writer, *metadata)
        return envelope_from_fields(info.type_name, read(value), *metadata)

    def peek_type(self, headers: h.Headers | None) -> tuple[str, int] | None:
        return h.peek_type(headers)

    def _decoded(self, raw: bytes) -> str:
        text = self._text.get(raw)
        if text is None:
            if len(self._text) >= _TEXT_CACHE_MAX:
                self._text.clear()
            text = self._text[raw] = h.text(raw)
        return text

    def _resolve_type(self, found: dict[str, Any]) -> _TypeInfo:
        """The slow path of a record whose type and version are not the catalog's pair of
        header bytes: missing, text, or unknown: say which (raises a DecodeError)."""
        missing = [name for name in _REQUIRED if found.get(name) is None]
        if missing:
            raise MissingHeaderError(f"record lacks header(s) {', '.join(missing)}")
        try:
            type_ = h.text(found[h.TYPE])
            version = int(h.text(found[h.DATAVERSION]))
        except ValueError:
            raise MalformedRecordError(
                f"unreadable {h.TYPE}/{h.DATAVERSION} headers: "
                f"{found[h.TYPE]!r}, {found[h.DATAVERSION]!r}"
            ) from None
        info = self._info.get((type_, version))
        if info is None:
            self.payloads.writer_schema(type_, version)  # raises UnknownType/VersionError
            raise MalformedRecordError(f"no schema for {type_}@{version}")
        return info

    def _reader(self, info: _TypeInfo, target: int | None) -> Read:
        """The function reading payloads of ``info``'s version as ``target`` (cached)."""
        type_, writer = info.type_name, info.writer
        if target is None or target == writer:
            schema = info.schema

            def read(data: bytes) -> Any:
                return read_exact(data, schema, None, type_, writer)
        else:
            payloads = self.payloads
            payloads.decode_plan(type_, writer, target)  # raises NoResolutionPathError now

            def read(data: bytes) -> Any:
                return payloads.decode(type_, writer, data, target)

        info.readers[target] = read
        return read

    def _decode_structured(
        self, value: bytes | None, found: dict[str, Any], version: int | None
    ) -> Envelope:
        """The earlier format: the envelope record in the value, headers mirroring it.
        A record with no headers at all that is not one lacks the current format's."""
        try:
            rec = read_structured(value)
        except MalformedRecordError:
            if found:
                raise
            raise MissingHeaderError(
                f"record carries no envelope headers ({h.CONTENT_TYPE}, {h.ID}, {h.TYPE}, "
                f"{h.DATAVERSION}, ...) and its value is not an envelope record"
            ) from None
        type_: str = rec["type"]
        writer: int = rec["version"]
        info = self._info.get((type_, writer))
        if (
            info is None
            or found.get(h.TYPE) != info.type[1]
            or found.get(h.DATAVERSION) != info.version[1]
            or found.get(h.ID) != rec["id"].encode()
        ):
            self._check_structured_headers(found, rec)  # raises, unless headers may be absent
        if info is not None and (version is None or version == writer):
            data = read_exact(rec["data"], info.schema, None, type_, writer)
        else:  # unknown schema (raises the precise error) or another version: resolve
            data = self.payloads.decode(type_, writer, rec["data"], version)
        return envelope_from_fields(
            type_,
            data,
            writer if version is None else version,
            rec["key"],
            rec["id"],
            rec["time"],
            rec["source"],
            rec["correlation_id"],
            rec["causation_id"],
        )

    def _check_structured_headers(self, found: dict[str, Any], rec: dict[str, Any]) -> None:
        """Say which header is missing or disagrees with the value (or accept none at all)."""
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
                f"record {rec['id']} ({rec['type']}@{rec['version']}) lacks header(s) "
                f"{', '.join(missing)}"
            )
        if type_b != rec["type"].encode():
            raise _mismatch(h.TYPE, type_b, rec["type"])
        if version_b != str(rec["version"]).encode():
            raise _mismatch(h.DATAVERSION, version_b, rec["version"])
        if id_b != rec["id"].encode():
            raise _mismatch(h.ID, id_b, rec["id"])


def _mismatch(name: str, header: bytes | None, body: object) -> HeaderMismatchError:
    shown = header.decode(errors="replace") if header is not None else None
    return HeaderMismatchError(f"header {name}={shown!r} disagrees with the body's {body!r}")


def _envelope_error(env: Envelope, exc: Exception) -> EncodeError:
    checks: list[tuple[str, bool]] = [
        ("id", isinstance(env.id, str)),
        ("source", isinstance(env.source, str)),
        ("key", env.key is None or isinstance(env.key, str)),
        ("correlation_id", env.correlation_id is None or isinstance(env.correlation_id, str)),
        ("causation_id", env.causation_id is None or isinstance(env.causation_id, str)),
    ]
    for name, ok in checks:
        if not ok:
            return EncodeError(f"envelope field '{name}' is invalid: {exc}", field=name)
    return EncodeError(f"envelope field 'time' is invalid: {exc}", field="time")
