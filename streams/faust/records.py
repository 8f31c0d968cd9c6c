"""Typed ``faust.Record`` classes generated from the catalog, and the follow helper.

``record_class(catalog, "order.accepted", 1)`` makes (once per catalog, type and
version) a record class whose fields are the payload's, in schema order, typed from the
.avsc: ``string``/``enum`` → ``str``, ``int``/``long`` → ``int``, ``float``/``double``
→ ``float``, ``boolean`` → ``bool``, ``bytes``/``fixed`` → ``bytes``, a union with
``null`` → ``Optional``, ``array`` → ``list``, ``map`` → ``dict[str, ...]``, a nested
record → ``dict[str, Any]`` (as the codec hands it), ``timestamp-*`` → ``datetime``,
``date`` → ``date``, ``decimal`` → ``Decimal``. A field's Avro default becomes its
default when every later field has one too (Python's rule for arguments).

A record decoded by an ``EnvelopeSchema(..., as_record=True)`` carries the envelope it
came in: ``record.envelope`` (id, correlation and causation ids, key, time, source).
``follow(cause, record)`` makes the envelope of a reply: same correlation id, causation id
= the cause's id (``Envelope.follow``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Optional

import faust

from streams.codec.locate import LOGICAL_TYPES
from streams.envelope import Envelope
from streams.faust.errors import EnvelopeTopicError
from streams.schemas.catalog import SchemaCatalog

_PRIMITIVES: dict[str, Any] = {
    "string": str,
    "enum": str,
    "int": int,
    "long": int,
    "float": float,
    "double": float,
    "boolean": bool,
    "bytes": bytes,
    "fixed": bytes,
    "null": type(None),
}
# uuid fields are annotated str, as the generated records always declared them (fastavro
# reads them as uuid.UUID; generated records do not coerce, so the annotation is a hint).
_LOGICAL: dict[str, Any] = {**LOGICAL_TYPES, "uuid": str}
_MUTABLE = (list, dict)


class EnvelopeRecord(faust.Record, abstract=True):
    """Base of the generated record classes: the payload of ``envelope_type``@``version``.

    ``envelope`` is the envelope the record was decoded from (None for a record made in
    code, until ``follow`` wraps it)."""

    envelope_type: ClassVar[str]
    envelope_version: ClassVar[int]
    # The payload's field names when Faust's __init__ would store every value as given
    # (no coercion, tags or validation: see _make_class), else empty.
    _stored_as_given: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def from_envelope(cls, env: Envelope) -> EnvelopeRecord:
        """The record of ``env``'s payload, carrying ``env``."""
        data = env.data
        if data.keys() == cls._stored_as_given:
            # What cls(**data) makes, written directly: Faust's __init__ would pass each
            # value through its field's descriptor only to store it unchanged, the
            # largest part of a decoded record's cost.
            record: EnvelopeRecord = cls.__new__(cls)
            fields = record.__dict__
            fields.update(data)
            fields["__evaluated_fields__"] = set()
        else:  # missing or unknown fields: Faust's own errors and defaults
            record = cls(**data)
        record.__dict__["_envelope"] = env
        return record

    @property
    def envelope(self) -> Envelope | None:
        found: Envelope | None = self.__dict__.get("_envelope")
        return found

    def to_data(self) -> dict[str, Any]:
        """The payload as the codec writes it (field name → value)."""
        data: dict[str, Any] = self.asdict()
        return data


RecordClass = type[EnvelopeRecord]

_CLASSES: dict[tuple[int, str, int], RecordClass] = {}


def record_class(catalog: SchemaCatalog, type: str, version: int) -> type[EnvelopeRecord]:
    """The ``EnvelopeRecord`` subclass of ``type``@``version`` (made once, then reused).

    Raises the catalog's ``SchemaNotFoundError`` when it has no such schema."""
    key = (id(catalog), type, version)
    cls = _CLASSES.get(key)
    if cls is None:
        cls = _CLASSES[key] = _make_class(catalog.get(type, version), type, version)
    return cls


def _make_class(schema: Any, type_: str, version: int) -> type[EnvelopeRecord]:
    fields = schema["fields"]
    annotations: dict[str, Any] = {}
    namespace: dict[str, Any] = {"__annotations__": annotations}
    defaults_allowed = True
    for field in reversed(fields):  # a default only where every later field has one
        annotations[field["name"]] = _python_type(field["type"])
        if defaults_allowed and "default" in field and not isinstance(field["default"], _MUTABLE):
            namespace[field["name"]] = field["default"]
        else:
            defaults_allowed = False
    namespace["__annotations__"] = dict(reversed(annotations.items()))
    namespace["envelope_type"] = type_
    namespace["envelope_version"] = version
    namespace["__doc__"] = f"The payload of {type_} v{version} (generated from its .avsc)."
    name = "".join(part.title() for part in type_.replace("-", ".").split(".")) + f"V{version}"
    made: type[EnvelopeRecord] = type(
        name,
        (EnvelopeRecord,),
        namespace,
        namespace=f"streams.faust.{type_}.v{version}",
        include_metadata=False,
    )
    options = made._options
    tagged = any(getattr(field, "tag", None) for field in options.descriptors.values())
    if not (options.coerce or options.validation or tagged or hasattr(made, "__post_init__")):
        made._stored_as_given = frozenset(options.fieldset)
    return made


def _python_type(avro: Any) -> Any:
    if isinstance(avro, list):  # a union
        members = [m for m in avro if m != "null"]
        inner = _python_type(members[0]) if len(members) == 1 else Any
        return Optional[inner] if len(members) < len(avro) else inner  # noqa: UP045 - a runtime type
    if isinstance(avro, str):
        return _PRIMITIVES.get(avro, dict[str, Any])  # a named type: a record, as a dict
    logical = avro.get("logicalType")
    if logical in _LOGICAL:
        return _LOGICAL[logical]
    kind = avro.get("type")
    if kind == "array":
        return list[_python_type(avro["items"])]  # type: ignore[misc]
    if kind == "map":
        return dict[str, _python_type(avro["values"])]  # type: ignore[misc]
    if kind == "record":
        return dict[str, Any]
    return _python_type(kind)


def follow(
    cause: Envelope | EnvelopeRecord,
    reply: EnvelopeRecord,
    *,
    key: str | None = None,
    source: str | None = None,
) -> Envelope:
    """The envelope of ``reply`` (a generated record) caused by ``cause``: same correlation
    id, causation id = the cause's id, the cause's key unless ``key`` is given.

    Raises ``EnvelopeTopicError`` when ``cause`` is a record that carries no envelope."""
    env = cause if isinstance(cause, Envelope) else cause.envelope
    if env is None:
        raise EnvelopeTopicError(
            f"cannot follow a {type(cause).__name__} made in code: it carries no envelope "
            "(follow the record the agent received, or its .envelope)"
        )
    return env.follow(
        reply.envelope_type,
        reply.to_data(),
        version=reply.envelope_version,
        key=key,
        source=source,
    )


def as_envelope(value: Any) -> Envelope:
    """What an ``EnvelopeSchema`` sends: an Envelope, or a decoded record (its envelope,
    with the record's current fields). Raises ``EnvelopeTopicError`` for anything else."""
    if isinstance(value, Envelope):
        return value
    if isinstance(value, EnvelopeRecord) and value.envelope is not None:
        env = value.envelope
        return env.with_data(
            value.to_data(), type=value.envelope_type, version=value.envelope_version
        )
    if isinstance(value, EnvelopeRecord):
        raise EnvelopeTopicError(
            f"a {type(value).__name__} made in code has no envelope: send "
            "streams.faust.follow(cause, record), or an Envelope"
        )
    if isinstance(value, Mapping):
        raise EnvelopeTopicError(
            "an envelope topic sends Envelopes, not dicts: send cause.follow(type, data) "
            "or Envelope.new(type, data)"
        )
    raise EnvelopeTopicError(f"an envelope topic sends Envelopes, not {type(value).__name__}")
