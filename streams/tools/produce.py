"""Write envelopes from JSON lines: what ``streams produce`` does.

Each non-blank input line is one payload (a JSON object) of the chosen type and version.
It is read as JSON (``streams.codec.jsonmap``), keyed (``KeySpec``), wrapped in a new
envelope and encoded with the codec the runtime uses, which validates it against the
schema; only then is it written. Records are keyed by the envelope's key, with Java's
partitioner, as the runtime writes them.

Timing: ``produce_lines`` reads lazily (a pipe works, at ``rate`` records per second if
given) and returns once the broker acknowledged every record (idempotent producer,
``acks=all``). The first bad line stops it: the records before it are flushed and
``ProduceInputError`` names the line, the field and how many records were written.

Raw records (``raw_records``, ``streams produce --raw``) skip the envelope: each line is a
value as it is, optionally split into key and value at a separator (kcat's ``-K``), an
empty value a tombstone when asked (kcat's ``-Z``). Both kinds go through
``produce_records``, with the same pacing, acknowledgement and errors.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from confluent_kafka import KafkaError, Message, Producer

from streams.cluster import Cluster, TopicNotFoundError
from streams.codec.avro import AvroCodec
from streams.codec.errors import EncodeError
from streams.codec.jsonmap import from_json
from streams.envelope import Envelope
from streams.errors import ProduceError, StreamsError
from streams.tools import CLI_SOURCE
from streams.tools.consume import headers_view

Headers = list[tuple[str, str | bytes | None]]
T = TypeVar("T")
FLUSH_TIMEOUT = 60.0

_TEMPLATE_FIELD = re.compile(r"\{([^{}]*)\}")
_RATE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:/s)?")


class ProduceInputError(StreamsError):
    """An input line, or an option, that cannot become an envelope."""


def parse_type_ref(text: str, codec: AvroCodec) -> tuple[str, int]:
    """``order.placed@2`` as ``("order.placed", 2)``; without ``@N``, the type's latest
    version. Raises ``ProduceInputError`` for a type or version the catalog lacks."""
    name, sep, version = text.strip().partition("@")
    catalog = codec.catalog
    if not catalog.has_type(name):
        known = ", ".join(catalog.types()) or "none"
        raise ProduceInputError(f"--type {text}: no schemas for type {name!r} (known: {known})")
    if not sep:
        return name, catalog.latest(name)
    number = version.removeprefix("v")
    if not number.isdigit():
        raise ProduceInputError(f"--type {text}: expected TYPE@VERSION, e.g. {name}@1")
    if not catalog.has(name, int(number)):
        known = ", ".join(f"v{v}" for v in catalog.versions(name))
        raise ProduceInputError(f"--type {text}: {name} has no version {number} (known: {known})")
    return name, int(number)


def parse_rate(text: str) -> float:
    """Records per second from ``100`` or ``100/s``. Raises ``ProduceInputError``."""
    match = _RATE.fullmatch(text.strip())
    if match is None or float(match.group(1)) <= 0:
        raise ProduceInputError(f"--rate {text}: expected records per second, e.g. 100 or 100/s")
    return float(match.group(1))


@dataclass(frozen=True, slots=True)
class KeySpec:
    """Where a record's key comes from: a payload field (``customer_id``, dotted for a
    nested one: ``customer.id``) or a template of fields (``{customer_id}-{order_id}``)."""

    text: str
    template: bool
    paths: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> KeySpec:
        if "{" in text or "}" in text:
            paths = tuple(p.strip() for p in _TEMPLATE_FIELD.findall(text))
            rest = _TEMPLATE_FIELD.sub("", text)
            if not paths or any(not p for p in paths) or "{" in rest or "}" in rest:
                raise ProduceInputError(
                    f"--key {text}: a template names fields in braces, e.g. "
                    "'{customer_id}-{order_id}'"
                )
            return cls(text, True, paths)
        if not text.strip():
            raise ProduceInputError("--key needs a field name or a template")
        return cls(text, False, (text.strip(),))

    def key_of(self, data: Mapping[str, Any]) -> str:
        """The key of a payload (as read from JSON). Raises ``ProduceInputError``."""
        if not self.template:
            return _key_text(self.paths[0], data)
        return _TEMPLATE_FIELD.sub(lambda m: _key_text(m.group(1).strip(), data), self.text)


def _key_text(path: str, data: Mapping[str, Any]) -> str:
    value: Any = data
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise ProduceInputError(f"--key: field '{path}' is not in the payload")
        value = value[part]
    if value is None:
        raise ProduceInputError(f"--key: field '{path}' is null")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping | list):
        raise ProduceInputError(f"--key: field '{path}' is not a single value")
    return str(value)


@dataclass(frozen=True, slots=True)
class EnvelopeMaker:
    """Turns one payload read from JSON into an envelope of ``type``@``version``."""

    codec: AvroCodec
    type: str
    version: int
    key: KeySpec | None = None
    source: str = CLI_SOURCE
    correlation_id: str | None = None

    def make(self, payload: Any) -> tuple[Envelope, bytes, Headers]:
        """A new envelope (fresh id and time) and its encoded ``(value, headers)``.
        Raises ``ProduceInputError`` saying which field is wrong."""
        if not isinstance(payload, dict):
            raise ProduceInputError(f"expected a JSON object, got {type(payload).__name__}")
        data = from_json(self.codec.catalog.get(self.type, self.version), payload)
        key = self.key.key_of(payload) if self.key is not None else None
        env = Envelope.new(
            self.type,
            data,
            version=self.version,
            key=key,
            source=self.source,
            correlation_id=self.correlation_id,
        )
        try:
            value, headers = self.codec.encode(env)
        except EncodeError as exc:
            # "order.placed@2: field 'x': ..." reads "field 'x': ..." after the line number
            raise ProduceInputError(
                str(exc).removeprefix(f"{self.type}@{self.version}: ")
            ) from None
        return env, value, list[tuple[str, str | bytes | None]](headers)


def read_payloads(lines: Iterable[str]) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed JSON)`` of each non-blank line. Raises ``ProduceInputError``
    naming the line for one that is not JSON."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise ProduceInputError(
                f"line {number}: not JSON: {exc.msg} (column {exc.colno})"
            ) from None


def payloads_to_send(lines: Iterable[str], count: int | None) -> Iterator[tuple[int, Any]]:
    """The payloads to write: every line, or exactly ``count`` records, cycling over the
    lines when there are fewer (each cycle makes new envelopes, with new ids)."""
    return _take(read_payloads(lines), count)


def _take(items: Iterable[T], count: int | None) -> Iterator[T]:
    """Every item, or exactly ``count``, cycling over them when there are fewer."""
    if count is None:
        yield from items
        return
    if count <= 0:
        return
    seen: list[T] = []
    sent = 0
    for item in items:
        yield item
        sent += 1
        if sent >= count:
            return
        seen.append(item)
    if not seen:
        raise ProduceInputError("no records in the input (every line is blank)")
    while True:
        for item in seen:
            yield item
            sent += 1
            if sent >= count:
                return


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One record to write: key, value (None: a tombstone) and headers."""

    key: str | bytes | None
    value: bytes | None
    headers: Headers = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """As ``streams consume --format raw`` shows a record (text values)."""
        return {
            "key": _text(self.key),
            "value": _text(self.value),
            "headers": headers_view(
                [(name, v.encode() if isinstance(v, str) else v) for name, v in self.headers]
            ),
        }


def _text(data: str | bytes | None) -> str | None:
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def envelope_records(
    lines: Iterable[str], maker: EnvelopeMaker, *, count: int | None = None
) -> Iterator[Outgoing]:
    """One envelope record per payload line (``payloads_to_send``). Raises
    ``ProduceInputError`` naming the line of a payload that is not valid."""
    for number, payload in payloads_to_send(lines, count):
        try:
            env, value, headers = maker.make(payload)
        except ProduceInputError as exc:
            raise ProduceInputError(f"line {number}: {exc}") from None
        yield Outgoing(env.key, value, headers)


def raw_records(
    lines: Iterable[str],
    *,
    key: str | None = None,
    key_separator: str | None = None,
    null: bool = False,
    count: int | None = None,
) -> Iterator[Outgoing]:
    """One record per non-blank line, its text as the value (UTF-8), no envelope.

    ``key`` keys every record; ``key_separator`` splits each line at its first
    occurrence into key and value (a line without it is refused, as
    kafka-console-producer's ``parse.key``); with ``null`` an empty value is written as
    null, a tombstone. ``count`` as in ``payloads_to_send``. Options that do not go
    together are refused at once, a line without the separator when it is read."""
    if key is not None and key_separator is not None:
        raise ProduceInputError("give a key for every record or a key separator, not both")
    if key_separator == "":
        raise ProduceInputError("the key separator cannot be empty")
    return _raw_records(lines, key, key_separator, null, count)


def _raw_records(
    lines: Iterable[str], key: str | None, key_separator: str | None, null: bool, count: int | None
) -> Iterator[Outgoing]:
    numbered = ((n, line.rstrip("\r\n")) for n, line in enumerate(lines, 1) if line.strip())
    for number, line in _take(numbered, count):
        record_key: str | None = key
        value = line
        if key_separator is not None:
            record_key, sep, value = line.partition(key_separator)
            if not sep:
                raise ProduceInputError(f"line {number}: no key separator {key_separator!r}")
        yield Outgoing(record_key, None if null and not value else value.encode())


@dataclass(slots=True)
class ProduceResult:
    """What was written: records acknowledged, and the offsets they got per partition."""

    topic: str
    count: int = 0
    offsets: dict[int, tuple[int, int]] = field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "count": self.count,
            "seconds": round(self.seconds, 3),
            "partitions": [
                {"partition": p, "first_offset": first, "last_offset": last}
                for p, (first, last) in sorted(self.offsets.items())
            ],
        }


class _Deliveries:
    """The producer's delivery callback: counts acknowledged records and keeps the
    offset range per partition, and the first failure."""

    def __init__(self, result: ProduceResult) -> None:
        self.result = result
        self.error: str | None = None

    def __call__(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            if self.error is None:
                self.error = err.str()
            return
        p: int = msg.partition()  # type: ignore[assignment]
        offset: int = msg.offset()  # type: ignore[assignment]
        first, last = self.result.offsets.get(p, (offset, offset))
        self.result.offsets[p] = (min(first, offset), max(last, offset))
        self.result.count += 1


class _Pacer:
    """Spaces records ``1/rate`` seconds apart, serving delivery reports meanwhile."""

    def __init__(self, rate: float | None) -> None:
        self.interval = 1.0 / rate if rate else 0.0
        self.started = time.monotonic()
        self.sent = 0

    def wait(self, poll: Callable[[float], object]) -> None:
        if self.interval:
            due = self.started + self.sent * self.interval
            while (left := due - time.monotonic()) > 0:
                poll(left)  # blocks until the record is due, or a delivery report comes
        self.sent += 1


def producer_for(cluster: Cluster, deliveries: _Deliveries) -> Producer:
    return Producer(
        cluster.client_config(
            **{
                "on_delivery": deliveries,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                # Java's default partitioner: a key lands where the runtime puts it
                "partitioner": "murmur2_random",
            }
        )
    )


def check_topic(cluster: Cluster, topic: str) -> None:
    """Raise ``TopicNotFoundError`` (with the command that fixes it) for a missing topic:
    writing to it would create it with the broker's defaults, or wait forever."""
    try:
        cluster.partition_count(topic)
    except TopicNotFoundError:
        raise TopicNotFoundError(
            f"topic {topic!r} does not exist (create it: streams topics create {topic})"
        ) from None


def produce_lines(
    cluster: Cluster,
    topic: str,
    lines: Iterable[str],
    maker: EnvelopeMaker,
    *,
    count: int | None = None,
    rate: float | None = None,
    flush_timeout: float = FLUSH_TIMEOUT,
) -> ProduceResult:
    """Write one envelope per payload line (see the module docstring): ``produce_records``
    of ``envelope_records``."""
    records = envelope_records(lines, maker, count=count)
    return produce_records(cluster, topic, records, rate=rate, flush_timeout=flush_timeout)


def produce_records(
    cluster: Cluster,
    topic: str,
    records: Iterable[Outgoing],
    *,
    headers: Headers | None = None,
    rate: float | None = None,
    flush_timeout: float = FLUSH_TIMEOUT,
) -> ProduceResult:
    """Write ``records`` (each with ``headers`` added) to ``topic``; blocks until every
    record is acknowledged. Raises ``ProduceInputError`` for a bad input line (after
    flushing the records before it), ``ProduceError`` when the broker refused records."""
    check_topic(cluster, topic)
    started = time.perf_counter()
    result = ProduceResult(topic)
    deliveries = _Deliveries(result)
    producer = producer_for(cluster, deliveries)
    pacer = _Pacer(rate)
    failure: ProduceInputError | None = None
    try:
        for record in records:
            pacer.wait(producer.poll)
            _produce(producer, topic, record, headers or [])
            if deliveries.error is not None:
                break
    except ProduceInputError as exc:  # a line that is not a record
        failure = exc
    finally:
        left = producer.flush(flush_timeout)
    result.seconds = time.perf_counter() - started
    if deliveries.error is not None or left:
        reason = deliveries.error or f"{left} records not acknowledged within {flush_timeout:g} s"
        raise ProduceError(f"writing to {topic!r} failed: {reason} ({_written(result)})")
    if failure is not None:
        raise ProduceInputError(f"{failure} ({_written(result)})")
    return result


def _written(result: ProduceResult) -> str:
    if not result.count:
        return "nothing was written"
    noun = "record was" if result.count == 1 else "records were"
    return f"{result.count} {noun} already written to {result.topic}"


def _produce(producer: Producer, topic: str, record: Outgoing, headers: Headers) -> None:
    every = [*record.headers, *headers] if headers else record.headers
    while True:
        try:
            producer.produce(topic, record.value, record.key, headers=every)
            return
        except BufferError:  # the local queue is full: let deliveries drain, then retry
            producer.poll(0.1)


def dry_run(
    lines: Iterable[str], maker: EnvelopeMaker, *, count: int | None = None
) -> Iterator[Envelope]:
    """The envelopes ``produce_lines`` would write, as a consumer would read them
    (encoded, then decoded: schema defaults filled in); nothing is written and no cluster
    is needed. Raises ``ProduceInputError`` for a bad line."""
    for number, payload in payloads_to_send(lines, count):
        try:
            _env, value, headers = maker.make(payload)
        except ProduceInputError as exc:
            raise ProduceInputError(
                f"line {number}: {exc} (dry run: nothing was written)"
            ) from None
        yield maker.codec.decode(value, headers)
