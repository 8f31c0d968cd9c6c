"""``TestDriver``: run a topology in memory, without a broker or threads.

Like Kafka Streams' ``TopologyTestDriver``. ``pipe`` feeds envelopes to a source topic;
each is processed completely before ``pipe`` returns, in the order given, exactly as the
runtime processes one partition: one record at a time, in offset order, outputs emitted in
the order the steps produce them. Input and output partitions are chosen from the key with
Kafka's default partitioner, so they match the broker's for the same partition counts.

By default every envelope goes through the Avro codec both ways, as on the broker: inputs
are encoded and decoded as the source's reader version, outputs are encoded (so a payload
that does not fit its schema fails here, not in production) and decoded back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from streams.codec import Codec, DecodeError
from streams.envelope import Envelope
from streams.errors import StreamsError
from streams.failures.routing import Route
from streams.state.base import Transaction
from streams.state.testing import RecordingProducer
from streams.testing.driver_state import DriverState
from streams.testing.failures import DriverFailureRouting, clock_of
from streams.topology.context import RecordMeta
from streams.topology.decoding import decode_source
from streams.topology.errors import TopologyError
from streams.topology.nodes import SinkNode, SourceNode
from streams.topology.partitioning import partition_for
from streams.topology.plan import Plan
from streams.topology.policy import (
    ErrorAction,
    ProcessingError,
    ProcessingFailure,
    StepFailed,
    fail,
)
from streams.topology.topology import Topology

Headers = list[tuple[str, bytes | None]]
_DEFAULT_CODEC: Any = object()


@dataclass(frozen=True, slots=True)
class DriverMessage:
    """An in-memory record; quacks like ``confluent_kafka.Message`` for the plan."""

    _topic: str
    _partition: int
    _offset: int
    _timestamp_ms: int
    _key: bytes | None
    _value: bytes | None
    _headers: Headers = field(default_factory=list)

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def timestamp(self) -> tuple[int, int]:
        return (1, self._timestamp_ms)  # TIMESTAMP_CREATE_TIME

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> Headers:
        return self._headers


@dataclass(frozen=True, slots=True)
class OutputRecord:
    """What a sink wrote: the envelope and where it landed."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    envelope: Envelope
    value: bytes | None = None
    headers: Headers = field(default_factory=list)


class TestDriver:
    """Feeds a ``Topology`` and records what its sinks write.

    ``partitions``: partition count for every topic (an int) or per topic (a mapping,
    default 1). ``codec``: the codec both ways (default: ``AvroCodec`` on the default
    catalog; None: envelopes pass untouched, no schema checks). Use as a context manager or
    call ``close()`` so class processors are closed.

    Errors: a record whose policy says FAIL raises ``ProcessingError`` from ``pipe``;
    with SKIP it is appended to ``skipped``. With a retry policy (``retry=`` on the builder
    or a step) failures are routed instead: see ``retried``, ``dead_letters``,
    ``waiting_retries``, and ``advance_time`` to let retry records come due.
    """

    __test__ = False  # not a pytest test class, despite the name

    def __init__(
        self,
        topology: Topology,
        *,
        partitions: int | Mapping[str, int] = 1,
        codec: Codec | None = _DEFAULT_CODEC,
        start_time_ms: int = 1_700_000_000_000,
    ) -> None:
        if codec is _DEFAULT_CODEC:
            from streams.codec import AvroCodec  # noqa: PLC0415 - loads the catalog
            from streams.schemas import default_catalog  # noqa: PLC0415

            codec = AvroCodec(default_catalog())
        self.topology = topology
        self.codec = codec
        self._partitions = partitions
        self._time_ms = start_time_ms
        self._next_offset: dict[tuple[str, int], int] = {}
        self._outputs: dict[str, list[OutputRecord]] = {}
        self._read_upto: dict[str, int] = {}
        self.skipped: list[ProcessingFailure] = []
        self._state: DriverState | None = None
        if topology.stores:
            self._state = DriverState(topology, self._current_partition, self._clock)
        stores = self._state.routed if self._state is not None else None
        self._plan = Plan(topology, self._emit, stores, clock=self._clock)
        self._routing: DriverFailureRouting | None = None
        if topology.retry_policies:  # failures go to in-memory retry tiers and DLQs
            if codec is None:
                raise StreamsError("a topology with a retry policy needs the driver's codec")
            self._routing = DriverFailureRouting(
                topology,
                self._plan,
                codec,
                write=self._write,
                clock=clock_of(lambda: self._time_ms),
                state=self._state,
            )

    # -- input -------------------------------------------------------------------------------
    def pipe(
        self,
        topic: str,
        envelopes: Envelope | Iterable[Envelope],
        *,
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> None:
        """Process ``envelopes`` read from ``topic``, one by one, before returning."""
        self._source(topic)
        items = [envelopes] if isinstance(envelopes, Envelope) else list(envelopes)
        for env in items:
            key = env.key.encode() if env.key is not None else None
            if self.codec is not None:
                value, headers = self.codec.encode(env)
                self.pipe_raw(
                    topic,
                    value,
                    list(headers),
                    key=key,
                    partition=partition,
                    timestamp_ms=timestamp_ms,
                )
            else:
                msg = self._message(
                    topic,
                    key=key,
                    value=None,
                    headers=[],
                    partition=partition,
                    timestamp_ms=timestamp_ms,
                )
                self._run(msg, env)

    def pipe_raw(
        self,
        topic: str,
        value: bytes | None,
        headers: Headers | None = None,
        *,
        key: bytes | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> None:
        """Process raw bytes read from ``topic`` (decoding included), e.g. to test bad input."""
        msg = self._message(
            topic,
            key=key,
            value=value,
            headers=list(headers or []),
            partition=partition,
            timestamp_ms=timestamp_ms,
        )
        source = self._source(topic)
        if self.codec is None:
            raise StreamsError("pipe_raw needs a codec")
        if self._routing is not None:
            self._routing.process(msg)
            self._routing.run_due()
            return
        try:
            env = decode_source(self.codec, source, value, msg.headers())
        except DecodeError as exc:
            self._failed(ProcessingFailure("decode", exc, RecordMeta.from_message(msg), None), None)
            return
        self._run(msg, env)

    def advance_time(self, ms: int) -> None:
        """Move the record timestamp clock forward (each piped record also adds 1 ms).

        It is also the clock of stores and dedup windows: advancing past a ``ttl`` expires,
        and of retry tiers: retry records due by then are processed before it returns."""
        self._time_ms += ms
        if self._routing is not None:
            self._routing.run_due()

    # -- failure routing (topologies with a retry policy) ---------------------------------
    @property
    def retried(self) -> list[Route]:
        """Every record written to a retry tier, in write order (topic, headers, ``info``)."""
        return list(self._routing.retried) if self._routing else []

    @property
    def dead_letters(self) -> list[Route]:
        """Every record written to a DLQ, in write order: key, value and headers as on
        the broker, ``info`` the parsed error headers (exception, attempts, step, ...)."""
        return list(self._routing.dead_letters) if self._routing else []

    @property
    def waiting_retries(self) -> int:
        """Retry records not processed yet (``advance_time`` past their due time)."""
        return sum(len(q) for q in self._routing.pending.values()) if self._routing else 0

    def _clock(self) -> float:
        return self._time_ms / 1000

    def _current_partition(self) -> int:
        msg = self._plan.current.message
        if msg is None:
            raise TopologyError("a state store was used outside of processing a record")
        return msg.partition() or 0

    # -- state -------------------------------------------------------------------------------
    def store(self, name: str, partition: int = 0) -> Transaction:
        """Store ``name``'s partition ``partition`` as processors see it (to inspect or seed).
        Raises TopologyError for an unknown store or a partition no record has reached."""
        if self._state is None:
            raise TopologyError(f"topology {self.topology.app_id!r} declares no stores")
        return self._state.store(name, partition)

    @property
    def duplicates(self) -> int:
        """Records dropped by dedup steps so far."""
        return self._plan.duplicates

    @property
    def changelog(self) -> RecordingProducer | None:
        """What the stores wrote to their changelogs (None without stores)."""
        return self._state.changelog if self._state is not None else None

    # -- output ------------------------------------------------------------------------------
    def records(self, topic: str) -> list[OutputRecord]:
        """Every record written to ``topic`` so far, in write order (does not consume)."""
        return list(self._outputs.get(topic, []))

    def read(self, topic: str) -> list[Envelope]:
        """Envelopes written to ``topic`` since the last ``read`` of it, in write order."""
        out = self._outputs.get(topic, [])
        start = self._read_upto.get(topic, 0)
        self._read_upto[topic] = len(out)
        return [r.envelope for r in out[start:]]

    def close(self) -> None:
        self._plan.close()

    def __enter__(self) -> TestDriver:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- internals -----------------------------------------------------------------------
    def _source(self, topic: str) -> SourceNode:
        source = self._plan.sources.get(topic)
        if source is None:
            raise StreamsError(f"topology {self.topology.app_id!r} does not read {topic!r}")
        return source

    def partitions(self, topic: str) -> int:
        if isinstance(self._partitions, int):
            return self._partitions
        return self._partitions.get(topic, 1)

    def _message(
        self,
        topic: str,
        *,
        key: bytes | None,
        value: bytes | None,
        headers: Headers,
        partition: int | None,
        timestamp_ms: int | None,
    ) -> DriverMessage:
        n = self.partitions(topic)
        if partition is None:
            partition = partition_for(key, n) if key else 0
        elif not 0 <= partition < n:
            raise StreamsError(f"topic {topic!r} has {n} partition(s), not partition {partition}")
        offset = self._next_offset.get((topic, partition), 0)
        self._next_offset[(topic, partition)] = offset + 1
        self._time_ms += 1
        ts = self._time_ms if timestamp_ms is None else timestamp_ms
        return DriverMessage(topic, partition, offset, ts, key, value, headers)

    def _run(self, msg: DriverMessage, env: Envelope) -> None:
        plan, state = self._plan, self._state
        plan.current.message = msg
        if state is not None:
            state.begin(msg.topic(), msg.partition())
        try:
            plan.entry(msg.topic())(env)
        except StepFailed as exc:
            failure = ProcessingFailure(exc.step, exc.error, RecordMeta.from_message(msg), env)
            try:
                self._failed(failure, exc.policy)
            except ProcessingError:
                if state is not None:
                    state.abort()  # a failed record's changes are never committed
                raise
        finally:
            plan.current.message = None
        if state is not None:
            state.commit(msg.topic(), msg.partition(), msg.offset() + 1)

    def _failed(self, failure: ProcessingFailure, step_policy: Any) -> None:
        policy = step_policy or self.topology.on_error or fail
        if policy(failure) is ErrorAction.SKIP:
            self.skipped.append(failure)
            return
        raise ProcessingError(failure) from failure.error

    def _emit(self, _sink: SinkNode, topic: str, env: Envelope) -> None:
        if self._routing is not None:  # written when the record succeeds
            self._routing.outbox.append((topic, env))
            return
        self._write(topic, env)

    def _write(self, topic: str, env: Envelope) -> None:
        key = env.key.encode() if env.key is not None else None
        value: bytes | None = None
        headers: Headers = []
        if self.codec is not None:
            value, raw_headers = self.codec.encode(env)
            headers = list(raw_headers)
            env = self.codec.decode(value, headers)
        partition = partition_for(key, self.partitions(topic)) if key else 0
        offset = self._next_offset.get((topic, partition), 0)
        self._next_offset[(topic, partition)] = offset + 1
        record = OutputRecord(topic, partition, offset, key, env, value, headers)
        self._outputs.setdefault(topic, []).append(record)
