"""``EnvelopeSchema``: a ``faust.Schema`` that reads and writes Streams envelopes.

A Faust topic whose schema is ``EnvelopeSchema(catalog, "order.accepted", version=1)``
hands its agent ``Envelope`` values (or, with ``as_record=True``, records of the
generated class, each carrying its envelope): every record value and its ``ce_*``
headers are decoded by Streams' ``AvroCodec``, the writer's version resolved to the
declared one (Avro rules, upcasters applied), exactly as a Streams topology reads it.
Sending an ``Envelope`` (or a decoded record) to such a topic writes our wire format, the
``ce_id``/``ce_type``/``ce_dataversion`` headers included, and the envelope's key as the
record key when the send gives none.

Bad input never reaches the agent and never stops it. A record that does not decode
(garbage, empty, an unknown type or version, another type than declared, no resolution
to the declared version) is, with ``on_error="dlq"`` (the default), written to
``<app>-<topic>-dlq`` with the error headers a Streams topology writes, and the decode
waits for that write's acknowledgement; with ``on_error="skip"`` it is logged at WARNING.
Then ``BadEnvelopeError`` (Faust's ``ValueDecodeError``) is raised: Faust acks the
record, so its offset is committed past it, and the ``EnvelopeTopic`` it is read from
does not pass the error on to the agent. Using the schema on a plain ``faust.Topic``
raises ``EnvelopeTopicError`` when the topic is made, as does an app on the
``confluent://`` transport (``ConfluentTransportError``), which drops headers.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from functools import lru_cache
from typing import Any, Literal

import faust

from streams.codec.avro import AvroCodec
from streams.codec.errors import DecodeError, HeaderMismatchError, MissingHeaderError
from streams.codec.upcast import Upcasters
from streams.envelope import Envelope
from streams.faust.dead_letter import record_headers, send_dead_letter
from streams.faust.errors import BadEnvelopeError, EnvelopeTopicError, WrongTypeError
from streams.faust.records import EnvelopeRecord, RecordClass, as_envelope, record_class
from streams.faust.transport import check_transport
from streams.schemas.catalog import SchemaCatalog

OnError = Literal["dlq", "skip"]
ON_ERROR: tuple[OnError, ...] = ("dlq", "skip")

log = logging.getLogger("streams.faust")


@lru_cache(maxsize=16)
def _shared_codec(catalog: SchemaCatalog) -> AvroCodec:
    # A codec prepares every (type, version) of its catalog: one per catalog, not per topic.
    return AvroCodec(catalog)


class EnvelopeSchema(faust.Schema[bytes, Any]):
    """The envelopes of ``type``, read as ``version``; see the module docstring.

    ``on_error``: ``"dlq"`` (default) or ``"skip"``. ``as_record``: decode to the
    generated record class (``self.record``) instead of ``Envelope``. ``upcasters``: the
    codec's, for version steps Avro resolution cannot express. Raises the catalog's
    ``SchemaNotFoundError`` when it has no ``type``@``version``.
    """

    def __init__(
        self,
        catalog: SchemaCatalog,
        type: str,
        version: int = 1,
        *,
        on_error: OnError = "dlq",
        as_record: bool = False,
        upcasters: Upcasters | None = None,
    ) -> None:
        if on_error not in ON_ERROR:
            raise EnvelopeTopicError(f"on_error must be one of {', '.join(ON_ERROR)}: {on_error!r}")
        catalog.get(type, version)  # raises now, naming what is missing
        super().__init__(key_serializer="raw", value_serializer="raw")
        self.catalog = catalog
        self.type = type
        self.version = version
        self.on_error: OnError = on_error
        self.codec = (
            _shared_codec(catalog) if upcasters is None else AvroCodec(catalog, upcasters=upcasters)
        )
        self.record: RecordClass | None = (
            record_class(catalog, type, version) if as_record else None
        )

    # -- reading ---------------------------------------------------------------------------

    def decode_envelope(self, value: bytes | None, headers: Any) -> Envelope | EnvelopeRecord:
        """The agent's value for a record: raises the codec's ``DecodeError`` (or
        ``WrongTypeError``) on bad input."""
        try:
            # As Faust hands them over aiokafka (str names, bytes values): what the codec
            # reads, so the good path converts nothing.
            env = self.codec.decode(value, headers, version=self.version)
        except (MissingHeaderError, HeaderMismatchError):
            # Headers made by hand may have bytes names or str values: read them again as
            # (str, bytes) pairs before the error stands.
            env = self.codec.decode(value, record_headers(headers), version=self.version)
        if env.type != self.type:
            raise WrongTypeError(
                f"record {env.id} is a {env.type}@{env.version}: this topic's schema reads "
                f"{self.type}"
            )
        return env if self.record is None else self.record.from_envelope(env)

    def loads_value(self, app: Any, message: Any, **_: Any) -> Envelope | EnvelopeRecord:
        """Faust's hook (used by ``Schema.decode``); bad input raises ``BadEnvelopeError``
        without dead-lettering: the compiled decode (``compile``) is what topics use."""
        try:
            return self.decode_envelope(message.value, message.headers)
        except DecodeError as exc:
            raise BadEnvelopeError(exc) from exc

    def compile(
        self,
        app: Any,
        *,
        on_key_decode_error: Callable[[Exception, Any], Awaitable[None]] | None = None,
        on_value_decode_error: Callable[[Exception, Any], Awaitable[None]] | None = None,
        default_propagate: bool = False,
    ) -> Callable[..., Awaitable[Any]]:
        """The decode function of a topic (Faust calls this when the topic is made)."""
        check_transport(app)
        channel = getattr(on_value_decode_error, "__self__", None)
        if isinstance(channel, faust.Topic) and not getattr(
            channel, "handles_bad_envelopes", False
        ):
            raise EnvelopeTopicError(
                f"topic {', '.join(channel.topics)!r} reads envelopes through a plain "
                "faust.Topic, whose bad records would crash the agent: make it with "
                "streams.faust.envelope_topic(app, name, schema) (or faust.App(..., "
                "Topic=streams.faust.EnvelopeTopic))"
            )
        create_event = app.create_event
        decode_envelope = self.decode_envelope
        on_bad = self._on_bad_record(app)

        async def decode(message: Any, *, propagate: bool = default_propagate) -> Any:
            try:
                value = decode_envelope(message.value, message.headers)
            except DecodeError as exc:
                await on_bad(message, exc)
                error = BadEnvelopeError(exc)
                if propagate or on_value_decode_error is None:
                    raise error from exc
                await on_value_decode_error(error, message)
                return None
            return create_event(message.key, value, message.headers, message)

        return decode

    def _on_bad_record(self, app: Any) -> Callable[[Any, DecodeError], Awaitable[None]]:
        if self.on_error == "dlq":

            async def dead_letter(message: Any, exc: DecodeError) -> None:
                route = await send_dead_letter(app, message, exc)
                log.warning(
                    "dead-lettered %s[%d]@%d to %s: %s",
                    message.topic, message.partition, message.offset, route.topic, exc,
                )  # fmt: skip

            return dead_letter

        async def skip(message: Any, exc: DecodeError) -> None:
            log.warning(
                "skipped %s[%d]@%d: %s", message.topic, message.partition, message.offset, exc
            )

        return skip

    # -- writing ---------------------------------------------------------------------------

    def dumps_key(self, app: Any, key: Any, *, serializer: Any = None, headers: Any) -> Any:
        """Keys are raw bytes (``str`` as UTF-8), as Streams writes an envelope's key."""
        return (key.encode() if isinstance(key, str) else key), headers

    def dumps_value(self, app: Any, value: Any, *, serializer: Any = None, headers: Any) -> Any:
        """``(value bytes, headers)`` of our wire format for an Envelope or decoded record.

        Raises ``EnvelopeTopicError`` for other values or an envelope of another type, and
        the codec's ``EncodeError`` for data that does not fit its schema."""
        env = as_envelope(value)
        if env.type != self.type:
            raise EnvelopeTopicError(
                f"cannot send a {env.type} envelope to a topic of {self.type} envelopes"
            )
        payload, codec_headers = self.codec.encode(env)
        return payload, _with_headers(headers, codec_headers)

    def __repr__(self) -> str:
        return f"<EnvelopeSchema: {self.type} v{self.version} on_error={self.on_error}>"


def _with_headers(headers: Any, ours: Sequence[tuple[str, bytes]]) -> Any:
    """Faust's open headers (a dict or a list of pairs) with ours set, replacing any of
    the same name (an agent forwarding a record's headers must not send two ``ce_id``)."""
    if headers is None:
        return dict(ours)
    if type(headers) is dict or isinstance(headers, MutableMapping):  # Faust's: a dict
        headers.update(ours)
        return headers
    names = {name for name, _ in ours}
    return [pair for pair in headers if pair[0] not in names] + list(ours)
