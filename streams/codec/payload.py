"""Payload encoding and version resolution, shared by every codec that uses the catalog.

A reader asks for version ``target`` of a type; data written at version ``writer`` reaches
it by a plan made once per (type, writer, target) and cached: Avro resolution where the
schemas allow it, upcaster functions for the steps that have one.
"""

from __future__ import annotations

from dataclasses import dataclass
from io import BytesIO
from typing import Any

from fastavro import schemaless_reader, schemaless_writer

from streams.codec.errors import (
    EncodeError,
    MalformedRecordError,
    NoResolutionPathError,
    UnknownSchemaError,
    UnknownTypeError,
    UnknownVersionError,
    UpcastError,
)
from streams.codec.locate import locate
from streams.codec.upcast import Upcasters
from streams.schemas.catalog import SchemaCatalog
from streams.schemas.compatibility import reader_problems


@dataclass(frozen=True, slots=True)
class _Resolve:
    """Read data of version ``writer`` as version ``reader`` (Avro resolution)."""

    writer: int
    reader: int


@dataclass(frozen=True, slots=True)
class _Upcast:
    """Apply the upcaster from version ``writer`` to ``writer + 1``."""

    writer: int


_Step = _Resolve | _Upcast


class Payloads:
    """Encode and decode payloads of the catalog's types. Thread-safe (caches only grow)."""

    def __init__(self, catalog: SchemaCatalog, upcasters: Upcasters | None = None) -> None:
        self.catalog = catalog
        self.upcasters = upcasters or Upcasters()
        self._plans: dict[tuple[str, int, int], list[_Step]] = {}

    def schema_for_encode(self, type_: str, version: int) -> Any:
        """The parsed schema of ``type_``@``version``; UnknownSchemaError when absent."""
        try:
            return self.catalog.get(type_, version)
        except LookupError as exc:
            raise UnknownSchemaError(f"cannot encode: {exc}", field="type") from None

    def unknown_schema(self, type_: str, version: int) -> UnknownSchemaError:
        """The error for encoding ``type_``@``version``, which the catalog lacks."""
        try:
            self.catalog.get(type_, version)
        except LookupError as exc:
            return UnknownSchemaError(f"cannot encode: {exc}", field="type")
        return UnknownSchemaError(f"cannot encode {type_}@{version}", field="type")

    def encode(self, type_: str, version: int, data: Any) -> bytes:
        """Schemaless Avro of ``data``. Raises EncodeError naming the field that does not fit.

        Fields the schema lacks are refused (a misspelt field would otherwise be dropped
        silently); missing fields take their schema default.
        """
        schema = self.schema_for_encode(type_, version)
        buf = BytesIO()
        try:
            schemaless_writer(buf, schema, data, strict_allow_default=True)
        except Exception as exc:  # fastavro raises TypeError/ValueError/OverflowError/...
            raise encode_error(type_, version, schema, data, exc) from exc
        return buf.getvalue()

    def decode(self, type_: str, writer: int, data: bytes, target: int | None) -> Any:
        """The payload written at ``writer``, as version ``target`` (None: as written).

        Raises UnknownTypeError/UnknownVersionError, NoResolutionPathError,
        MalformedRecordError (bytes do not fit the writer schema) or UpcastError.
        """
        writer_schema = self.writer_schema(type_, writer)
        if target is None or target == writer:
            return read_exact(data, writer_schema, None, type_, writer)
        plan = self._plans.get((type_, writer, target))
        if plan is None:
            plan = self._plan(type_, writer, target)
        current: Any = data
        version = writer
        is_bytes = True
        for step in plan:
            if isinstance(step, _Resolve):
                if not is_bytes:  # data came out of an upcaster: re-encode to resolve it
                    current = self._reencode(type_, version, current)
                current = read_exact(
                    current,
                    self.catalog.get(type_, step.writer),
                    self.catalog.get(type_, step.reader),
                    type_,
                    step.writer,
                )
                version = step.reader
            else:
                if is_bytes:
                    current = read_exact(
                        current, self.catalog.get(type_, version), None, type_, version
                    )
                current = self._upcast(type_, step.writer, current)
                version = step.writer + 1
            is_bytes = False
        return current

    def decode_plan(self, type_: str, writer: int, target: int) -> None:
        """Check that version ``writer`` data can be read as ``target`` (the plan is made
        and cached); raises UnknownTypeError/UnknownVersionError, NoResolutionPathError."""
        self.writer_schema(type_, writer)
        if (type_, writer, target) not in self._plans:
            self._plan(type_, writer, target)

    def writer_schema(self, type_: str, version: int) -> Any:
        try:
            return self.catalog.get(type_, version)
        except LookupError as exc:
            if not self.catalog.has_type(type_):
                raise UnknownTypeError(str(exc)) from None
            raise UnknownVersionError(str(exc)) from None

    def _plan(self, type_: str, writer: int, target: int) -> list[_Step]:
        if not self.catalog.has(type_, target):
            self.writer_schema(type_, target)  # raises the precise error
        steps: list[_Step] = []
        if writer < target:
            current = writer
            for u in self.upcasters.steps(type_, writer, target):
                if u > current:
                    steps.append(_Resolve(current, u))
                steps.append(_Upcast(u))
                current = u + 1
            if current != target:
                steps.append(_Resolve(current, target))
        else:
            steps.append(_Resolve(writer, target))
        for step in steps:
            if isinstance(step, _Resolve):
                problems = reader_problems(
                    self.catalog.entry(type_, step.reader).raw,
                    self.catalog.entry(type_, step.writer).raw,
                )
                if problems:
                    p = problems[0]
                    declared = sorted(
                        v
                        for v in self.catalog.event_type(type_).upcast
                        if step.writer < v <= step.reader
                    )
                    hint = (
                        f"; schemas/{type_}/type.json declares v{declared[0]} as upcast: "
                        f"register an upcaster for ({type_!r}, {declared[0] - 1})"
                        if declared
                        else ""
                    )
                    raise NoResolutionPathError(
                        f"{type_}: no way to read v{writer} data as v{target}: "
                        f"v{step.reader} cannot read v{step.writer} (field '{p.field}': "
                        f"{p.reason}) and no upcaster covers that step{hint}"
                    )
        self._plans[(type_, writer, target)] = steps
        return steps

    def _reencode(self, type_: str, version: int, data: Any) -> bytes:
        try:
            return self.encode(type_, version, data)
        except EncodeError as exc:
            raise UpcastError(f"upcaster output does not fit {type_}@{version}: {exc}") from exc

    def _upcast(self, type_: str, from_version: int, data: Any) -> Any:
        fn = self.upcasters[(type_, from_version)]
        try:
            return fn(data)
        except Exception as exc:  # user code: any failure is this record's decode failure
            raise UpcastError(
                f"upcaster {type_} v{from_version}->v{from_version + 1} failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc


def read_exact(data: bytes, writer: Any, reader: Any, type_: str, version: int) -> Any:
    """Schemaless read of a ``type_``@``version`` payload that must consume every byte.

    Raises MalformedRecordError otherwise.
    """
    buf = BytesIO(data)
    try:
        result = schemaless_reader(buf, writer, reader)
    except Exception as exc:  # garbage makes fastavro raise many types (EOF, Unicode, ...)
        raise MalformedRecordError(
            f"{type_}@{version} payload is not valid Avro of its schema "
            f"({type(exc).__name__}: {exc})"
        ) from None
    if buf.tell() != len(data):
        raise MalformedRecordError(
            f"{type_}@{version} payload: {len(data) - buf.tell()} trailing byte(s) after "
            "the record (written with another schema?)"
        )
    return result


def encode_error(type_: str, version: int, schema: Any, data: Any, exc: Exception) -> EncodeError:
    found = locate(schema, data)
    if found is None:
        return EncodeError(f"{type_}@{version}: payload does not fit the schema: {exc}")
    field, reason = found
    return EncodeError(f"{type_}@{version}: field '{field}': {reason}", field=field)
