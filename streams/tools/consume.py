"""Read a topic's records and show them decoded: what ``streams consume`` does.

Positions are ``streams replay``'s (``plan_replay``): by default from the earliest record
to the end offsets as of the start; ``follow`` keeps reading new records instead (up to
``--to`` when given). Partitions are assigned, as by replay: no consumer group is joined
and nothing is committed. Records are read in batches (``Consumer.consume``).

A record that is not an envelope (garbage, a tombstone) is shown raw, its key and value
as text when UTF-8 (else base64, under ``key_base64``/``value_base64``), with the reason
under ``error``. An envelope whose type or version has no schema in the catalog shows what
needs none: its metadata (id, type, version, time, source, ids), its payload as
``data_base64``, and the reason. ``view`` never raises for a record's content.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Consumer, KafkaError, Message, TopicPartition

from streams.cluster import Cluster, TopicNotFoundError
from streams.codec.avro import AvroCodec
from streams.codec.envelope_wire import read_fields
from streams.codec.errors import DecodeError, UnknownTypeError, UnknownVersionError
from streams.codec.jsonmap import envelope_fields
from streams.replay.errors import PositionError, ReplayError
from streams.replay.filters import RecordFilter
from streams.replay.plan import ReplayPlan, plan_replay
from streams.replay.positions import PositionSpec, Shift, TopicSelection, format_ms

BATCH = 1000
POLL_TIMEOUT = 0.5  # seconds per consume call: how soon Ctrl-C and --follow's end are seen
TOPIC_POLL_INTERVAL = 0.5  # seconds between metadata requests for a topic not created yet
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class ConsumeError(ReplayError):
    """A partition could not be read."""


@dataclass(frozen=True, slots=True)
class ConsumeRequest:
    """What to read: a topic (or some partitions), from ``start`` to ``end`` (exclusive;
    None: the end offsets at the start, or never with ``follow``), the records that pass
    ``record_filter``, at most ``max_records`` of them. ``tail`` keeps only the last
    ``tail`` offsets of each partition's range, as kcat's ``-o -N`` (before the filters;
    transaction markers and compaction leave fewer records than offsets)."""

    selection: TopicSelection
    start: PositionSpec
    end: PositionSpec | None = None
    follow: bool = False
    record_filter: RecordFilter = field(default_factory=RecordFilter)
    max_records: int | None = None
    read_committed: bool = True
    tail: int | None = None


def read_batches(
    cluster: Cluster,
    request: ConsumeRequest,
    on_wait: Callable[[str], None] | None = None,
) -> Iterator[list[Message]]:
    """Batches of the records ``request`` asks for, in offset order per partition.

    Blocks on the broker; ends when every partition reached its end, or after
    ``max_records``; with ``follow`` and no end, runs until the caller stops iterating
    (or Ctrl-C). With ``follow``, a topic that does not exist yet is waited for (as
    kafka-console-consumer does: a consumer started before its producer is normal), and
    ``on_wait`` hears once why. Raises ``PositionError``, ``TopicNotFoundError`` (without
    ``follow``), ``ClusterError``, ``ConsumeError``.
    """
    for spec in (request.start, request.end):
        if spec is not None and any(
            isinstance(pos, Shift) for pos in (spec.default, *spec.per_partition.values())
        ):
            raise PositionError(
                f"{spec}: consume reads without a consumer group, so there is no committed "
                "offset to shift from; give an offset, a time or earliest/latest"
            )
    plan = _plan(cluster, request, on_wait)
    if request.tail is not None:
        last = request.tail
        plan = replace(
            plan, ranges=tuple(replace(r, start=max(r.start, r.end - last)) for r in plan.ranges)
        )
    bounded = request.end is not None or not request.follow
    ends: dict[int, int | None] = {
        r.partition: r.end if bounded else None for r in plan.ranges if not bounded or r.size > 0
    }
    limit = request.max_records
    if not ends or limit == 0:
        return
    consumer = _consumer(cluster, request.read_committed)
    try:
        consumer.assign([TopicPartition(plan.topic, r.partition, r.start) for r in plan.ranges
                         if r.partition in ends])  # fmt: skip
        yield from _Reader(plan.topic, ends, request.record_filter, limit).run(consumer)
    finally:
        consumer.close()


def _plan(
    cluster: Cluster, request: ConsumeRequest, on_wait: Callable[[str], None] | None
) -> ReplayPlan:
    told = False
    while True:
        try:
            return plan_replay(
                cluster,
                request.selection,
                request.start,
                request.end,
                read_committed=request.read_committed,
            )
        except TopicNotFoundError:
            if not request.follow:
                raise
            if not told and on_wait is not None:
                on_wait(f"waiting for topic {request.selection.topic!r} to be created")
            told = True
            time.sleep(TOPIC_POLL_INTERVAL)


def _consumer(cluster: Cluster, read_committed: bool) -> Consumer:
    return Consumer(
        cluster.client_config(
            **{
                # never joined nor committed (we assign): the id only satisfies the client
                "group.id": f"streams-consume-{uuid.uuid4().hex[:12]}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "enable.partition.eof": True,
                "isolation.level": "read_committed" if read_committed else "read_uncommitted",
                "auto.offset.reset": "earliest",
            }
        )
    )


@dataclass(slots=True)
class _Reader:
    topic: str
    ends: dict[int, int | None]  # partition -> end offset (exclusive), None: no end
    record_filter: RecordFilter
    limit: int | None

    def run(self, consumer: Consumer) -> Iterator[list[Message]]:
        everything = self.record_filter.everything
        kept = 0
        while self.ends:
            batch: list[Message] = []
            done: set[int] = set()
            for msg in consumer.consume(BATCH, timeout=POLL_TIMEOUT):
                p: int = msg.partition()  # type: ignore[assignment]
                if p not in self.ends or p in done:
                    continue  # finished: records fetched before the unassign
                end = self.ends[p]
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        if end is not None:
                            done.add(p)  # the log ends at or before the range's end
                        continue
                    raise ConsumeError(f"reading {self.topic}:{p} failed: {err.str()}")
                offset: int = msg.offset()  # type: ignore[assignment]
                if end is not None and offset >= end:
                    done.add(p)
                    continue
                if everything or self.record_filter.matches(msg.key(), msg.headers()):  # type: ignore[arg-type]
                    batch.append(msg)
                    kept += 1
                    if self.limit is not None and kept >= self.limit:
                        yield batch
                        return
                if end is not None and offset + 1 >= end:
                    done.add(p)
            finished = [TopicPartition(self.topic, p) for p in done]
            for p in done:
                del self.ends[p]
            if finished:
                consumer.incremental_unassign(finished)
            if batch:
                yield batch


def _text(data: bytes | None, name: str, into: dict[str, Any]) -> None:
    """``data`` under ``name`` as text when UTF-8, else base64 under ``<name>_base64``."""
    if data is None:
        into[name] = None
        return
    try:
        into[name] = data.decode()
    except UnicodeDecodeError:
        into[f"{name}_base64"] = base64.b64encode(data).decode("ascii")


def headers_view(headers: list[tuple[str, bytes | None]] | None) -> dict[str, Any]:
    """Headers by name, values as text (UTF-8, else ``base64:...``); a name that repeats
    has the list of its values."""
    out: dict[str, Any] = {}
    for name, raw in headers or ():
        if raw is None:
            value: str | None = None
        else:
            try:
                value = raw.decode()
            except UnicodeDecodeError:
                value = "base64:" + base64.b64encode(raw).decode("ascii")
        if name in out:
            previous = out[name]
            out[name] = [*previous, value] if isinstance(previous, list) else [previous, value]
        else:
            out[name] = value
    return out


def coordinates(msg: Message) -> dict[str, Any]:
    """Topic, partition, offset, timestamp (ISO 8601 UTC) and key of a record."""
    kind, ms = msg.timestamp()
    view: dict[str, Any] = {
        "topic": msg.topic(),
        "partition": msg.partition(),
        "offset": msg.offset(),
        "timestamp": format_ms(ms) if kind != TIMESTAMP_NOT_AVAILABLE and ms >= 0 else None,
    }
    _text(msg.key(), "key", view)
    return view


def raw_view(msg: Message, *, with_headers: bool = False) -> dict[str, Any]:
    """A record as it is on the wire: coordinates, key, value (text or base64)."""
    view = coordinates(msg)
    _text(msg.value(), "value", view)
    if with_headers:
        view["headers"] = headers_view(msg.headers())  # type: ignore[arg-type]
    return view


def view(msg: Message, codec: AvroCodec, *, with_headers: bool = False) -> dict[str, Any]:
    """A record decoded: coordinates, key, then the envelope's fields (its payload as
    JSON, ``streams.codec.jsonmap``). A record that does not decode is ``raw_view`` with
    an ``error``."""
    headers = msg.headers()
    try:
        env = codec.decode(msg.value(), headers)
        fields = envelope_fields(env)
    except (UnknownTypeError, UnknownVersionError) as exc:
        return _without_schema(msg, str(exc), with_headers=with_headers)
    except DecodeError as exc:
        broken = raw_view(msg, with_headers=with_headers)
        broken["error"] = str(exc)
        return broken
    out = coordinates(msg)
    del fields["key"]  # the record's key is shown; the envelope's is the same partition key
    out.update(fields)
    if with_headers:
        out["headers"] = headers_view(headers)  # type: ignore[arg-type]
    return out


def _without_schema(msg: Message, reason: str, *, with_headers: bool) -> dict[str, Any]:
    """An envelope whose payload has no schema here: the metadata the envelope record
    carries (read without the payload's schema), the payload as base64."""
    value: bytes = msg.value()  # type: ignore[assignment]
    id_, type_, version, when, source, _key, correlation, causation, data = read_fields(value)
    out = coordinates(msg)
    out.update(
        id=id_,
        type=type_,
        version=version,
        time=(_EPOCH + timedelta(microseconds=when)).isoformat(),
        source=source,
        correlation_id=correlation,
        causation_id=causation,
        data_base64=base64.b64encode(data).decode("ascii"),
        error=reason,
    )
    if with_headers:
        out["headers"] = headers_view(msg.headers())  # type: ignore[arg-type]
    return out
