"""The Confluent wire format, for teams whose other services expect it.

Value: magic byte ``0x00``, the schema id (4 bytes, big-endian) from a Confluent Schema
Registry, then the schemaless Avro of the *payload* (``schemas/<type>/v<N>.avsc``). The
envelope's metadata travels only in headers (CloudEvents' Kafka binary mode: every field,
``streams.codec.headers.metadata_headers``), ``ce_partitionkey`` for the envelope key.
Confluent's own ``AvroDeserializer`` reads these values.

Schemas are registered under a subject per type (by default the record's full name, like
Confluent's RecordNameStrategy, because one topic carries several types); each (type,
version) is registered or looked up once per codec, each id resolved once.

Needs ``confluent-kafka[schemaregistry]``. Registry calls block (HTTP) the first time a
(type, version) or id is seen; afterwards encode and decode are in-memory.
"""

from __future__ import annotations

import json
import struct
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from fastavro import parse_schema
from fastavro.schema import to_parsing_canonical_form

from streams.codec import headers as h
from streams.codec.base import KafkaHeaders
from streams.codec.errors import (
    BadHeaderError,
    EmptyRecordError,
    EncodeError,
    HeaderMismatchError,
    MalformedRecordError,
    MissingHeaderError,
    RegistryError,
    UnknownSchemaIdError,
    UnknownVersionError,
)
from streams.codec.payload import Payloads
from streams.codec.upcast import Upcasters
from streams.envelope import Envelope, envelope_from_fields
from streams.schemas.catalog import SchemaCatalog

MAGIC = 0
_FRAME = struct.Struct(">bI")

SubjectStrategy = Callable[[str, Any], str]


def record_name_subject(type_: str, schema: Any) -> str:
    """The subject of ``type_``: its payload record's full name (RecordNameStrategy)."""
    if isinstance(schema, dict) and "name" in schema:
        name = str(schema["name"])
        ns = schema.get("namespace")
        return name if "." in name or not ns else f"{ns}.{name}"
    return type_


class ConfluentAvroCodec:
    """``Codec`` in the Confluent wire format, over a ``SchemaRegistryClient``.

    ``auto_register`` (default True) registers a (type, version) the first time it is
    encoded; when False it must already be registered (looked up by schema). Registry
    failures raise ``RegistryError`` (retryable, never dead-lettered); a schema id the
    registry lacks is ``UnknownSchemaIdError`` (a DecodeError).
    """

    def __init__(
        self,
        catalog: SchemaCatalog,
        registry: SchemaRegistryClient,
        *,
        upcasters: Upcasters | None = None,
        subject: SubjectStrategy = record_name_subject,
        auto_register: bool = True,
    ) -> None:
        self.catalog = catalog
        self.registry = registry
        self.subject = subject
        self.auto_register = auto_register
        self.payloads = Payloads(catalog, upcasters)
        self._ids: dict[tuple[str, int], bytes] = {}
        self._versions: dict[int, tuple[str, int]] = {}
        self._canonical = {
            to_parsing_canonical_form(parse_schema(catalog.entry(t, v).raw)): (t, v)
            for t in catalog.types()
            for v in catalog.versions(t)
        }
        self._lock = threading.Lock()

    # -- encode ----------------------------------------------------------------------------

    def encode(self, env: Envelope) -> tuple[bytes, KafkaHeaders]:
        """``(value, headers)``. Raises EncodeError (naming the field) or RegistryError."""
        payload = self.payloads.encode(env.type, env.version, env.data)
        frame = self._ids.get((env.type, env.version))
        if frame is None:
            frame = self._register(env.type, env.version)
        # The headers are the only copy of the metadata in this format: every field.
        try:
            headers = h.metadata_headers(env)
        except Exception as exc:  # AttributeError, TypeError: a field of the wrong type
            raise EncodeError(f"envelope metadata cannot be written as headers: {exc}") from exc
        return frame + payload, headers

    def schema_id(self, type_: str, version: int) -> int:
        """The registry id of ``type_``@``version`` (registering it when allowed)."""
        frame = self._ids.get((type_, version)) or self._register(type_, version)
        return int(_FRAME.unpack(frame)[1])

    def _register(self, type_: str, version: int) -> bytes:
        raw = self.catalog.entry(type_, version).raw
        subject = self.subject(type_, raw)
        schema = Schema(json.dumps(raw), "AVRO")
        schema_id: int | None
        try:
            if self.auto_register:
                schema_id = self.registry.register_schema(subject, schema)
            else:
                schema_id = self.registry.lookup_schema(subject, schema).schema_id
        except SchemaRegistryError as exc:
            raise RegistryError(
                f"schema registry refused {type_}@{version} under subject {subject!r}: {exc}"
            ) from exc
        except Exception as exc:  # transport errors of the HTTP client
            raise RegistryError(f"schema registry unreachable: {exc}") from exc
        if schema_id is None:
            raise RegistryError(f"schema registry gave no id for {type_}@{version}")
        frame = _FRAME.pack(MAGIC, schema_id)
        with self._lock:
            self._ids[(type_, version)] = frame
            self._versions[schema_id] = (type_, version)
        return frame

    # -- decode ----------------------------------------------------------------------------

    def decode(
        self,
        value: bytes | None,
        headers: h.Headers | None = None,
        *,
        version: int | None = None,
        lazy: bool = False,
    ) -> Envelope:
        """The envelope: payload from the value, metadata from the headers.

        Raises DecodeError subclasses for bad input (empty, no magic byte, unknown schema
        id, missing/unreadable/disagreeing headers, bytes that do not fit), RegistryError
        when the registry cannot be asked.
        """
        if not value:
            raise EmptyRecordError("empty record value: not an envelope")
        if len(value) < _FRAME.size or value[0] != MAGIC:
            raise MalformedRecordError(
                f"not Confluent-framed Avro ({len(value)} bytes; expected magic byte 0 "
                "and a 4-byte schema id)"
            )
        schema_id = _FRAME.unpack_from(value)[1]
        found = self._versions.get(schema_id)
        if found is None:
            found = self._resolve_id(schema_id)
        type_, writer = found
        meta = {k: h.as_bytes(v) for k, v in h.pairs(headers)}
        self._check(meta, type_, writer)
        data = self.payloads.decode(type_, writer, value[_FRAME.size :], version)
        return envelope_from_fields(
            type_,
            data,
            writer if version is None else version,
            _text(meta, h.PARTITIONKEY, required=False),
            _text(meta, h.ID),
            _time(meta),
            _text(meta, h.SOURCE),
            _text(meta, h.CORRELATION_ID, required=False),
            _text(meta, h.CAUSATION_ID, required=False),
        )

    def peek_type(self, headers: h.Headers | None) -> tuple[str, int] | None:
        return h.peek_type(headers)

    def _resolve_id(self, schema_id: int) -> tuple[str, int]:
        try:
            registered = self.registry.get_schema(schema_id)
        except SchemaRegistryError as exc:
            if exc.http_status_code == 404:
                raise UnknownSchemaIdError(
                    f"schema id {schema_id} is not in the registry"
                ) from None
            raise RegistryError(f"schema registry failed for id {schema_id}: {exc}") from exc
        except Exception as exc:
            raise RegistryError(f"schema registry unreachable: {exc}") from exc
        try:
            canonical = to_parsing_canonical_form(
                parse_schema(json.loads(registered.schema_str or "null"))
            )
        except Exception as exc:
            raise UnknownSchemaIdError(
                f"schema id {schema_id} is not an Avro schema: {exc}"
            ) from None
        match = self._canonical.get(canonical)
        if match is None:
            raise UnknownVersionError(
                f"schema id {schema_id} matches no version in the catalog "
                "(register it as schemas/<type>/v<N>.avsc)"
            )
        with self._lock:
            self._versions[schema_id] = match
        return match

    @staticmethod
    def _check(meta: dict[str, bytes | None], type_: str, version: int) -> None:
        for name in (h.ID, h.TYPE, h.DATAVERSION, h.SOURCE, h.TIME):
            if meta.get(name) is None:
                raise MissingHeaderError(
                    f"Confluent-framed {type_}@{version} record lacks header {name}: "
                    "the envelope's metadata travels in headers in this format"
                )
        if meta[h.TYPE] != type_.encode():
            raise HeaderMismatchError(
                f"header {h.TYPE}={_show(meta[h.TYPE])} disagrees with the schema id's {type_!r}"
            )
        if meta[h.DATAVERSION] != str(version).encode():
            raise HeaderMismatchError(
                f"header {h.DATAVERSION}={_show(meta[h.DATAVERSION])} disagrees with the "
                f"schema id's version {version}"
            )


def _show(value: bytes | None) -> str:
    return repr(value.decode(errors="replace")) if value is not None else "None"


def _text(meta: dict[str, bytes | None], name: str, *, required: bool = True) -> Any:
    raw = meta.get(name)
    if raw is None:
        if required:
            raise MissingHeaderError(f"record lacks header {name}")
        return None
    try:
        return raw.decode()
    except UnicodeDecodeError:
        raise BadHeaderError(f"header {name} is not UTF-8 text") from None


def _time(meta: dict[str, bytes | None]) -> datetime:
    text = _text(meta, h.TIME)
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise BadHeaderError(f"header {h.TIME}={text!r} is not an RFC 3339 time") from None
    if when.tzinfo is None:
        raise BadHeaderError(f"header {h.TIME}={text!r} has no UTC offset")
    return when
