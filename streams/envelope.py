"""The envelope every record Streams writes carries, and every processor reads.

Fields follow the message-design rules of async systems: ``id`` (unique, time-ordered
UUIDv7: the dedup key), ``type`` (``order.placed``), ``version`` (payload schema version),
``time`` (UTC, microseconds), ``source``, ``correlation_id``, ``causation_id``, ``key``
(partition key) and ``data`` (the payload).

An event made while a running topology processes a record (``Envelope.new``, ``follow``)
has an id derived from that record's (``derived_id``: its cause's id, the source making it
and how many events that source made for the record before it), so work done again after
a crash or a rewind writes the same ids and ``dedup()`` downstream drops the copies. The
runtime sets ``CURRENT_CAUSE`` for that; elsewhere every id is new (``new_id``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from time import time_ns as _time_ns
from typing import Any, Protocol, TypeVar

from uuid_utils import UUID as _UUID
from uuid_utils import uuid5 as _uuid5
from uuid_utils import uuid7 as _uuid7

DEFAULT_SOURCE = os.environ.get("STREAMS_SOURCE", "streams")

CURRENT_SOURCE: ContextVar[str] = ContextVar("streams_current_source", default=DEFAULT_SOURCE)
"""The service making events in this context: what ``Envelope.new`` and ``follow`` give
an event made without a ``source``. A runtime sets its app id for each turn (and resets
it after), so the events its topology makes carry it from the start; elsewhere
``DEFAULT_SOURCE``."""


def new_id() -> str:
    """A UUIDv7 (RFC 9562) as text: 48-bit Unix ms timestamp, then counter and random bits.

    Strictly increasing within a process (a counter within each millisecond, as RFC 9562
    allows), so ids sort by creation and index well as dedup keys; across processes they
    sort by millisecond, and the random bits keep them apart. Thread-safe and fork-safe
    (a forked child draws its own random bits). Made by ``uuid-utils`` (Rust's ``uuid``
    crate): 0.4 µs, a fifth of the pure-Python generator it replaced.
    """
    return str(_uuid7())


class Cause(Protocol):
    """What events made now are caused by (a running topology's record in hand)."""

    def derived_id(self, source: str) -> str | None:
        """The id of the next event ``source`` makes, or None when it has no cause (a
        timer's events: each id new)."""
        ...

    def pinned(self) -> Cause:
        """This cause as it is now, for work that goes on after the caller moved to
        another record (a coroutine started for this one)."""
        ...


CURRENT_CAUSE: ContextVar[Cause | None] = ContextVar("streams_current_cause", default=None)
"""The cause of the events made in this context (``Cause``): a runtime sets its record in
hand for each turn (and resets it after), so ``new`` and ``follow`` derive their ids."""

_STREAMS_IDS = _UUID("5d1f7c2e-3b8a-4f0e-9c61-2a7e4b9d0f13")  # the namespace of derived ids


@lru_cache(maxsize=4096)
def _namespace(source: str, index: int) -> _UUID:
    return _uuid5(_STREAMS_IDS, f"{source}\x00{index}")


def derived_id(cause_id: str, source: str, index: int) -> str:
    """The id of the ``index``-th event (from 0) ``source`` made for the event ``cause_id``:
    the same every time, distinct for every other cause, source or index. A UUIDv5 of the
    three; when the cause is a UUIDv7, in the form of one with the cause's millisecond (the
    UUIDv5's other bits kept), so ids stay ordered by time as dedup keys like to be. 0.9
    µs, a new id's 0.4."""
    made = str(_uuid5(_namespace(source, index), cause_id))
    if len(cause_id) == 36 and cause_id[14] == "7":
        return cause_id[:14] + "7" + made[15:]
    return made


def _event_id(source: str) -> str:
    """The id of an event ``source`` makes now: derived from ``CURRENT_CAUSE``, else new."""
    cause = CURRENT_CAUSE.get()
    if cause is not None:
        made = cause.derived_id(source)
        if made is not None:
            return made
    return new_id()


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True, eq=False)
class Envelope:
    """An immutable event: metadata plus a payload (``data``) of schema ``type``@``version``.

    ``time`` should be timezone-aware (a naive time is taken as UTC by the codec and comes
    back aware). ``data`` is a mapping of the payload's fields; codecs hand back plain dicts
    (an envelope read from Kafka decodes them when first read: ``WireEnvelope``). Two
    envelopes are equal when every field is.
    """

    type: str
    data: Mapping[str, Any]
    version: int = 1
    key: str | None = None
    id: str = field(default_factory=new_id)
    time: datetime = field(default_factory=utc_now)
    source: str = DEFAULT_SOURCE
    correlation_id: str | None = None
    causation_id: str | None = None

    @classmethod
    def new(
        cls,
        type: str,
        data: Mapping[str, Any],
        *,
        version: int = 1,
        key: str | None = None,
        source: str | None = None,
        correlation_id: str | None = None,
    ) -> Envelope:
        """A new event that starts a conversation: its correlation id is its own id. Its
        ``source``: as given, else the service making it (``CURRENT_SOURCE``). Its id is
        new, or derived from the record a running topology processes (the module
        docstring)."""
        if source is None:
            source = CURRENT_SOURCE.get()
        event_id = _event_id(source)
        correlation_id = correlation_id or event_id
        if cls is not Envelope:  # a subclass may have its own __init__
            return cls(
                type=type,
                data=data,
                version=version,
                key=key,
                id=event_id,
                source=source,
                correlation_id=correlation_id,
            )
        return timed_envelope(
            TimedEnvelope, type, data, version, key, event_id, now_micros(), source, correlation_id,
            None,
        )  # fmt: skip

    def follow(
        self,
        type: str,
        data: Mapping[str, Any],
        *,
        version: int = 1,
        key: str | None = None,
        source: str | None = None,
    ) -> Envelope:
        """A follow-up or reply caused by this event: same correlation id, causation = our id.

        Its ``source`` is the service that makes it, not this event's: ``source`` if given,
        else ``CURRENT_SOURCE`` (in a running topology, its app id). This event's source
        stays reachable through ``causation_id``. Its id is new, or derived from the record
        a running topology processes (the module docstring)."""
        if source is None:
            source = CURRENT_SOURCE.get()
        return timed_envelope(
            TimedEnvelope,
            type,
            data,
            version,
            self.key if key is None else key,
            _event_id(source),
            now_micros(),
            source,
            self.correlation_id or self.id,
            self.id,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Envelope):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def _fields(self) -> tuple[Any, ...]:
        return (
            self.type,
            self.data,
            self.version,
            self.key,
            self.id,
            self.time,
            self.source,
            self.correlation_id,
            self.causation_id,
        )

    @property
    def time_ms(self) -> int:
        """``time`` in epoch milliseconds (``epoch_ms``)."""
        return epoch_ms(self.time)

    def with_data(self, data: Mapping[str, Any], **changes: Any) -> Envelope:
        """The same event with another payload (and optionally other fields).

        An unknown field name in ``changes`` raises TypeError (as ``dataclasses.replace``)."""
        if changes:
            if type(self) not in _PLAIN or not _FIELD_NAMES.issuperset(changes):
                return replace(self, data=data, **changes)  # raises for unknown names
            get = changes.get
            return envelope_from_fields(
                get("type", self.type),
                data,
                get("version", self.version),
                get("key", self.key),
                get("id", self.id),
                get("time", self.time),
                get("source", self.source),
                get("correlation_id", self.correlation_id),
                get("causation_id", self.causation_id),
            )
        if type(self) not in _PLAIN:
            return replace(self, data=data)
        # The hot path of every map step: direct slot writes cost a fifth of replace().
        return _copy(self, data, self.source)

    def with_source(self, source: str) -> Envelope:
        """The same event from another ``source`` (a topology writes the events it made
        without one with its app id)."""
        if type(self) not in _PLAIN:
            return replace(self, source=source)
        return _copy(self, self.data, source)  # a quarter of replace()'s 2.4 µs


def _copy(env: Envelope, data: Mapping[str, Any], source: str) -> Envelope:
    return envelope_from_fields(
        env.type,
        data,
        env.version,
        env.key,
        env.id,
        env.time,
        source,
        env.correlation_id,
        env.causation_id,
    )


def _slot_setter(name: str) -> Callable[[Envelope, Any], None]:
    setter: Callable[[Envelope, Any], None] = vars(Envelope)[name].__set__
    return setter


_FIELD_NAMES = frozenset(f.name for f in fields(Envelope))
_new = object.__new__
_set_type = _slot_setter("type")
_set_data = _slot_setter("data")
_set_version = _slot_setter("version")
_set_key = _slot_setter("key")
_set_id = _slot_setter("id")
_set_time = _slot_setter("time")
_set_source = _slot_setter("source")
_set_correlation_id = _slot_setter("correlation_id")
_set_causation_id = _slot_setter("causation_id")


def envelope_from_fields(  # noqa: PLR0917 - positional: the hot path's cheapest call
    type: str,
    data: Mapping[str, Any],
    version: int,
    key: str | None,
    id: str,
    time: datetime,
    source: str,
    correlation_id: str | None,
    causation_id: str | None,
) -> Envelope:
    """An Envelope from every field, for codecs on the hot path: equal to ``Envelope(...)``
    with the same arguments, at half the cost (it skips the frozen dataclass's checked
    ``__init__`` by writing the slots directly)."""
    env: Envelope = _new(Envelope)
    _set_type(env, type)
    _set_data(env, data)
    _set_version(env, version)
    _set_key(env, key)
    _set_id(env, id)
    _set_time(env, time)
    _set_source(env, source)
    _set_correlation_id(env, correlation_id)
    _set_causation_id(env, causation_id)
    return env


class Tombstone(Envelope):
    """A table topic's record without a value: its key was deleted (``builder.table``).
    Its ``data`` is empty; only the table step that materialises the topic sees one."""


_DATA = vars(Envelope)["data"]  # the slots themselves, under WireEnvelope's properties
_TIME = vars(Envelope)["time"]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def epoch_ms(when: datetime) -> int:
    """``when`` in epoch milliseconds, rounded down, exactly (no float on the way); a
    naive time is UTC, as the codec reads it."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - _EPOCH) // _MS


class TimedEnvelope(Envelope):
    """An envelope holding its ``time`` as microseconds since the epoch until ``time`` is
    first read (then a datetime, as any envelope's).

    What ``Envelope.new`` and ``follow`` make, and codecs read (``WireEnvelope``): most
    events are written without a step ever asking for their time, and a datetime costs
    0.2 µs to make and as much to take back to microseconds for the wire. ``time_ms``
    needs no datetime either. In every other way it is an ``Envelope`` (equal to one with
    the same fields).
    """

    __slots__ = ("_micros",)
    _micros: int | None  # None once ``time`` is a datetime

    @property
    def time(self) -> datetime:
        micros = getattr(self, "_micros", None)  # unset when dataclasses.replace made it
        if micros is None:
            return _TIME.__get__(self, Envelope)  # type: ignore[no-any-return]
        value = _EPOCH + timedelta(microseconds=micros)
        _TIME.__set__(self, value)
        _set_micros(self, None)
        return value

    @time.setter
    def time(self, value: datetime) -> None:  # dataclasses.replace() sets it
        _TIME.__set__(self, value)
        _set_micros(self, None)

    @property
    def time_ms(self) -> int:
        micros: int | None = getattr(self, "_micros", None)
        if micros is None:
            return super().time_ms
        return micros // 1000  # as held: no datetime made


def held_micros(env: Envelope) -> int | None:
    """``env``'s time in microseconds since the epoch when it still holds it so (a
    ``TimedEnvelope`` whose ``time`` was never read), else None: what a codec writes
    without making a datetime and taking it back."""
    if type(env) in _TIMED:
        return getattr(env, "_micros", None)
    return None


def now_micros() -> int:
    """Now, in microseconds since the epoch: the clock and resolution of ``utc_now``."""
    return _time_ns() // 1000


class WireEnvelope(TimedEnvelope):
    """An envelope read from Kafka whose payload is decoded when ``data`` is first read.

    Codecs make them (``wire_envelope``): the metadata is read at once; the payload bytes
    wait, with the function that reads them (schema resolution included), so a step that
    only routes on ``type``, ``key`` or ``id`` never pays for decoding, and an envelope
    written on unchanged is written as the record value it came in
    (``untouched_value``). ``time`` too is held as read (``TimedEnvelope``). Reading
    ``data`` may raise the codec's ``DecodeError``. In every other way it is an
    ``Envelope`` (equal to one with the same fields).
    """

    __slots__ = ("_payload", "_read", "_value", "_writer")
    _value: bytes
    _payload: bytes | None  # None once decoded: the value no longer stands for the envelope
    _read: Callable[[bytes], Mapping[str, Any]]
    _writer: int

    # ``data`` and ``time`` test their held form, not try the slot: a raised
    # AttributeError costs a microsecond a record.

    @property
    def data(self) -> Mapping[str, Any]:
        payload = getattr(self, "_payload", None)  # unset when dataclasses.replace made it
        if payload is None:
            return _DATA.__get__(self, Envelope)  # type: ignore[no-any-return]
        value = self._read(payload)
        _DATA.__set__(self, value)
        _set_payload(self, None)
        return value

    @data.setter
    def data(self, value: Mapping[str, Any]) -> None:  # dataclasses.replace() sets it
        _DATA.__set__(self, value)
        _set_payload(self, None)

    def untouched_value(self) -> bytes | None:
        """The record value as read, while ``data`` was never read and the envelope's
        version is the writer's (else None: it must be encoded again). Only the codec
        that made the envelope calls it: the bytes are in its format.

        ``dataclasses.replace`` (other metadata) makes an envelope without the value: it
        is encoded again."""
        if getattr(self, "_payload", None) is not None and self._writer == self.version:
            return self._value
        return None


_PLAIN = (Envelope, TimedEnvelope, WireEnvelope)
_TIMED = (TimedEnvelope, WireEnvelope)
_set_micros = vars(TimedEnvelope)["_micros"].__set__
_Timed = TypeVar("_Timed", bound=TimedEnvelope)


def timed_envelope(  # noqa: PLR0917 - positional: the hot path's cheapest call
    kind: type[_Timed],
    type: str,
    data: Mapping[str, Any] | None,
    version: int,
    key: str | None,
    id: str,
    micros: int,
    source: str,
    correlation_id: str | None,
    causation_id: str | None,
) -> _Timed:
    """A ``kind`` (``TimedEnvelope`` or ``WireEnvelope``, whose ``data`` waits: None) from
    every field, its time ``micros`` since the epoch (``envelope_from_fields`` takes a
    datetime)."""
    env: _Timed = _new(kind)
    _set_type(env, type)
    _set_data(env, data)
    _set_version(env, version)
    _set_key(env, key)
    _set_id(env, id)
    _set_micros(env, micros)
    _set_source(env, source)
    _set_correlation_id(env, correlation_id)
    _set_causation_id(env, causation_id)
    return env


_set_value = vars(WireEnvelope)["_value"].__set__
_set_payload = vars(WireEnvelope)["_payload"].__set__
_set_read = vars(WireEnvelope)["_read"].__set__
_set_writer = vars(WireEnvelope)["_writer"].__set__


def wire_envelope(
    value: bytes,
    read_out: tuple[str, str, int, int, str, str | None, str | None, str | None, bytes],
    read: Callable[[bytes], Mapping[str, Any]],
    version: int,
) -> WireEnvelope:
    """A ``WireEnvelope`` read from record ``value``, whose envelope fields ``read_out`` are as
    ``streams.codec.envelope_wire.read_fields`` returns them (schema order: the time in
    microseconds, the payload bytes last); ``read`` reads the payload as ``version``. For
    codecs on the hot path."""
    id, type, writer, micros, source, key, correlation_id, causation_id, payload = read_out
    env = timed_envelope(
        WireEnvelope, type, None, version, key, id, micros, source, correlation_id, causation_id
    )
    _set_value(env, value)
    _set_payload(env, payload)
    _set_read(env, read)
    _set_writer(env, writer)
    return env
