"""The native wire format: an Avro envelope whose ``data`` holds the Avro payload.

Value: schemaless Avro of ``schemas/envelope.avsc``; its ``data`` field is the schemaless
Avro of ``schemas/<type>/v<version>.avsc``. Headers mirror the metadata (see
``streams.codec.headers``). The README's "Wire format" section is the full description.
"""

from __future__ import annotations

from datetime import UTC
from io import BytesIO
from typing import Any

from fastavro import schemaless_writer

from streams.codec import headers as h
from streams.codec.base import KafkaHeaders
from streams.codec.envelope_wire import envelope_value, read_envelope, type_version_bytes
from streams.codec.errors import (
    EmptyRecordError,
    EncodeError,
    HeaderMismatchError,
    MalformedRecordError,
    MissingHeaderError,
)
from streams.codec.payload import Payloads, encode_error, read_exact
from streams.codec.upcast import Upcasters
from streams.envelope import Envelope, envelope_from_fields
from streams.schemas.catalog import SchemaCatalog

_SPEC_HEADER = (h.SPECVERSION, h.SPECVERSION_VALUE)
_SOURCE_CACHE_MAX = 1024


class _TypeInfo:
    """What encode and decode need per (type, version), built once: the parsed schema and
    the header tuples that never change, shared by every record of that version."""

    __slots__ = (
        "dataschema",
        "schema",
        "type",
        "type_bytes",
        "type_version",
        "version",
        "version_bytes",
    )

    def __init__(self, type_: str, version: int, schema: Any) -> None:
        self.schema = schema
        # the envelope's encoded type and version fields (only encode needs them)
        self.type_version = type_version_bytes(type_, version) if schema is not None else b""
        self.type_bytes = type_.encode()
        self.version_bytes = str(version).encode()
        self.type = (h.TYPE, self.type_bytes)
        self.version = (h.DATAVERSION, self.version_bytes)
        self.dataschema = (h.DATASCHEMA, f"schemas/{type_}/v{version}.avsc".encode())


class AvroCodec:
    """Envelopes in Streams' own Avro wire format. Thread-safe; never blocks.

    ``require_headers`` (default True): a record without the ``ce_id``/``ce_type``/
    ``ce_dataversion`` headers is a ``MissingHeaderError``. When False, headers that are
    present are still checked against the body.
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
        self._envelope = catalog.envelope
        # The catalog is immutable: everything per (type, version) is prepared up front,
        # so the hot path is one dict lookup.
        self._info = {key: _TypeInfo(*key, schema) for key, schema in catalog.schema_map().items()}
        self._sources: dict[str, tuple[str, bytes]] = {}

    # -- encode ----------------------------------------------------------------------------

    def encode(self, env: Envelope) -> tuple[bytes, KafkaHeaders]:
        """``(value, headers)`` for ``env``. Raises EncodeError naming the field that fails."""
        info = self._info.get((env.type, env.version))
        if info is None:
            raise self.payloads.unknown_schema(env.type, env.version)
        buf = BytesIO()
        try:
            # Fields the schema lacks are refused: a misspelt field must not vanish silently.
            schemaless_writer(buf, info.schema, env.data, strict_allow_default=True)
        except Exception as exc:  # fastavro raises TypeError/ValueError/OverflowError/...
            raise encode_error(env.type, env.version, info.schema, env.data, exc) from exc
        try:
            # The envelope record by hand (same bytes as fastavro's writer, half the time).
            value = envelope_value(env, buf.getvalue(), info.type_version)
        except Exception as exc:
            raise _envelope_error(env, exc) from exc
        return value, self._headers(env, info)

    def headers(self, env: Envelope) -> KafkaHeaders:
        """The Kafka headers that mirror ``env``'s metadata."""
        info = self._info.get((env.type, env.version))
        return self._headers(env, info or _TypeInfo(env.type, env.version, None))

    def _headers(self, env: Envelope, info: _TypeInfo) -> KafkaHeaders:
        source = self._sources.get(env.source)
        if source is None:
            if len(self._sources) >= _SOURCE_CACHE_MAX:
                self._sources.clear()
            source = self._sources[env.source] = (h.SOURCE, env.source.encode())
        when = env.time
        if when.tzinfo is None:  # naive: taken as UTC, as the Avro timestamp is
            when = when.replace(tzinfo=UTC)
        out = [
            _SPEC_HEADER,
            (h.ID, env.id.encode()),
            info.type,
            source,
            (h.TIME, when.isoformat().encode()),
            info.dataschema,
            info.version,
        ]
        if env.correlation_id is not None:
            out.append((h.CORRELATION_ID, env.correlation_id.encode()))
        if env.causation_id is not None:
            out.append((h.CAUSATION_ID, env.causation_id.encode()))
        return out

    # -- decode ----------------------------------------------------------------------------

    def decode(
        self,
        value: bytes | None,
        headers: h.Headers | None = None,
        *,
        version: int | None = None,
    ) -> Envelope:
        """The envelope in ``value``, its payload as version ``version`` (None: as written).

        Raises only DecodeError subclasses: EmptyRecordError, MalformedRecordError,
        MissingHeaderError, HeaderMismatchError, UnknownTypeError, UnknownVersionError,
        NoResolutionPathError, UpcastError.
        """
        if not value:
            raise EmptyRecordError("empty record value: not an envelope")
        try:
            # The envelope record by hand (what fastavro's reader returns, in less time).
            rec = read_envelope(value)
        except Exception as exc:  # garbage: EOFError, UnicodeDecodeError, ValueError, ...
            raise MalformedRecordError(
                f"not a Streams envelope ({len(value)} bytes; {type(exc).__name__}: {exc})"
            ) from None
        type_: str = rec["type"]
        writer: int = rec["version"]
        info = self._info.get((type_, writer))
        # dict() of a handful of pairs (or a mapping): C-speed lookups afterwards.
        found: dict[str, h.HeaderValue] = dict(headers) if headers else {}
        if (
            info is None
            or found.get(h.TYPE) != info.type_bytes
            or found.get(h.DATAVERSION) != info.version_bytes
            or found.get(h.ID) != rec["id"].encode()
        ):
            self._check_headers(found, rec)  # raises, unless headers may be absent
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

    def peek_type(self, headers: h.Headers | None) -> tuple[str, int] | None:
        return h.peek_type(headers)

    def _check_headers(self, found: dict[str, h.HeaderValue], rec: dict[str, Any]) -> None:
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
