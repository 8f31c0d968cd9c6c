"""The native wire format: an Avro envelope whose ``data`` holds the Avro payload.

Value: schemaless Avro of ``schemas/envelope.avsc``; its ``data`` field is the schemaless
Avro of ``schemas/<type>/v<version>.avsc``. Headers mirror the metadata (see
``streams.codec.headers``). The README's "Wire format" section is the full description.
"""

from __future__ import annotations

from io import BytesIO
from typing import Any

from fastavro import schemaless_reader, schemaless_writer

from streams.codec import headers as h
from streams.codec.base import KafkaHeaders
from streams.codec.errors import (
    EmptyRecordError,
    EncodeError,
    HeaderMismatchError,
    MalformedRecordError,
    MissingHeaderError,
)
from streams.codec.payload import Payloads
from streams.codec.upcast import Upcasters
from streams.envelope import Envelope
from streams.schemas.catalog import SchemaCatalog

_REQUIRED = (h.TYPE, h.DATAVERSION, h.ID)


class AvroCodec:
    """Envelopes in Streams' own Avro wire format. Thread-safe; caches per type/version.

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
        # Per (type, version): the header values that never change, encoded once.
        self._static: dict[tuple[str, int], tuple[bytes, bytes, bytes]] = {}

    # -- encode ----------------------------------------------------------------------------

    def encode(self, env: Envelope) -> tuple[bytes, KafkaHeaders]:
        """``(value, headers)`` for ``env``. Raises EncodeError naming the field that fails."""
        data = self.payloads.encode(env.type, env.version, env.data)
        record = {
            "id": env.id,
            "type": env.type,
            "version": env.version,
            "time": env.time,
            "source": env.source,
            "key": env.key,
            "correlation_id": env.correlation_id,
            "causation_id": env.causation_id,
            "data": data,
        }
        buf = BytesIO()
        try:
            schemaless_writer(buf, self._envelope, record)
        except Exception as exc:
            raise _envelope_error(env, exc) from exc
        return buf.getvalue(), self.headers(env)

    def headers(self, env: Envelope) -> KafkaHeaders:
        """The Kafka headers that mirror ``env``'s metadata."""
        static = self._static.get((env.type, env.version))
        if static is None:
            static = (
                env.type.encode(),
                str(env.version).encode(),
                f"schemas/{env.type}/v{env.version}.avsc".encode(),
            )
            self._static[(env.type, env.version)] = static
        out = [
            (h.SPECVERSION, h.SPECVERSION_VALUE),
            (h.ID, env.id.encode()),
            (h.TYPE, static[0]),
            (h.SOURCE, env.source.encode()),
            (h.TIME, env.time.isoformat(timespec="microseconds").encode()),
            (h.DATASCHEMA, static[2]),
            (h.DATAVERSION, static[1]),
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
        buf = BytesIO(value)
        try:
            rec: dict[str, Any] = schemaless_reader(buf, self._envelope, None)  # type: ignore[assignment]
        except Exception as exc:  # garbage: EOFError, UnicodeDecodeError, ValueError, ...
            raise MalformedRecordError(
                f"not a Streams envelope ({len(value)} bytes; {type(exc).__name__}: {exc})"
            ) from None
        if buf.tell() != len(value):
            raise MalformedRecordError(
                f"not a Streams envelope: {len(value) - buf.tell()} trailing byte(s)"
            )
        type_: str = rec["type"]
        writer: int = rec["version"]
        self._check_headers(headers, rec)
        data = self.payloads.decode(type_, writer, rec["data"], version)
        return Envelope(
            type=type_,
            data=data,
            version=writer if version is None else version,
            key=rec["key"],
            id=rec["id"],
            time=rec["time"],
            source=rec["source"],
            correlation_id=rec["correlation_id"],
            causation_id=rec["causation_id"],
        )

    def peek_type(self, headers: h.Headers | None) -> tuple[str, int] | None:
        return h.peek_type(headers)

    def _check_headers(self, headers: h.Headers | None, rec: dict[str, Any]) -> None:
        found: dict[str, bytes | None] = {}
        if headers:
            for k, v in headers:
                if k in _REQUIRED and k not in found:
                    found[k] = v
        if len(found) < len(_REQUIRED):
            if not found and not self.require_headers:
                return
            missing = [n for n in _REQUIRED if n not in found]
            if self.require_headers or len(found) > 0:
                raise MissingHeaderError(
                    f"record {rec['id']} ({rec['type']}@{rec['version']}) lacks header(s) "
                    f"{', '.join(missing)}"
                )
        for name, body in ((h.TYPE, rec["type"]), (h.ID, rec["id"])):
            if name in found and found[name] != body.encode():
                raise _mismatch(name, found[name], body)
        if h.DATAVERSION in found and found[h.DATAVERSION] != str(rec["version"]).encode():
            raise _mismatch(h.DATAVERSION, found[h.DATAVERSION], rec["version"])


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
