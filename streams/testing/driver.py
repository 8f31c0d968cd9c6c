"""``TestDriver``: run a topology in memory, without a broker or threads.

Like Kafka Streams' ``TopologyTestDriver``, it runs the production code: the ``Runtime``
itself, with its chain of steps, committers and stores, on in-memory clients
(``streams.testing.memory``) and on the driver's clock. What passes here passes on the
broker, with the same outputs, dead letters and store contents.

``pipe`` writes envelopes to a source topic; each is processed completely before ``pipe``
returns, in the order given, as the runtime processes one partition: one record at a
time, in offset order, outputs in the order the steps produce them, then a commit (so
stores reach their changelogs after every record). Partitions are chosen from the key
with Kafka's default partitioner, so they match the broker's for the same partition counts.

By default every envelope goes through the Avro codec both ways, as on the broker: inputs
are encoded and decoded as the source's reader version, outputs are encoded (so a payload
that does not fit its schema fails here, not in production) and decoded back for reading.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from streams.codec import Codec
from streams.codec.base import KafkaHeaders
from streams.codec.headers import Headers as CodecHeaders
from streams.envelope import Envelope
from streams.errors import StreamsError
from streams.failures.headers import parse_failure_headers
from streams.failures.routing import Route
from streams.pipeline.stats import Stats
from streams.runtime import RuntimeConfig
from streams.runtime.instance import runtime_for
from streams.runtime.state import IN_MEMORY
from streams.state.transaction import PartitionTransaction
from streams.testing.memory import MemoryCluster, StoredRecord
from streams.testing.memory.admin import MemoryClients
from streams.topology.errors import TopologyError
from streams.topology.execution.reads import read_table
from streams.topology.failure_topics import failure_topics
from streams.topology.partitioning import partition_for
from streams.topology.policy import ProcessingError, ProcessingFailure
from streams.topology.reply import REPLY_TO
from streams.topology.specs import table_spec
from streams.topology.tables import copartition_problems
from streams.topology.topology import Topology

Headers = list[tuple[str, bytes | None]]
_DEFAULT_CODEC: Any = object()


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


class PassThrough:
    """The driver's codec when it is given none: envelopes cross the in-memory topics as
    themselves (a token in the value), with no schema checks."""

    def __init__(self) -> None:
        self._kept: dict[bytes, Envelope] = {}
        self._tokens = itertools.count()

    def encode(self, env: Envelope) -> tuple[bytes, KafkaHeaders]:
        token = b"envelope-%d" % next(self._tokens)
        self._kept[token] = env
        return token, []

    def decode(
        self,
        value: bytes | None,
        headers: CodecHeaders | None = None,
        *,
        version: int | None = None,
        lazy: bool = False,
    ) -> Envelope:
        from streams.codec.errors import MalformedRecordError  # noqa: PLC0415

        env = self._kept.get(value or b"")
        if env is None:
            raise MalformedRecordError("not an envelope piped through this driver")
        return env

    def peek_type(self, headers: CodecHeaders | None) -> tuple[str, int] | None:
        return None


class TestDriver:
    """Feeds a ``Topology`` and records what it writes.

    ``partitions``: partition count for every topic (an int) or per topic (a mapping,
    default 1); retry tiers, DLQs and changelogs get their input's. ``codec``: the codec
    both ways (default: ``AvroCodec`` on the default catalog; None: envelopes pass
    untouched, no schema checks). Use as a context manager or call ``close()``.

    Errors: a record whose policy says FAIL raises ``ProcessingError`` from ``pipe``, and
    the driver stops as the runtime would (later ``pipe`` calls raise ``StreamsError``);
    with SKIP it is appended to ``skipped``. With a retry policy (``retry=`` on the
    builder or a step) failures are routed instead: see ``retried``, ``dead_letters``,
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
        elif codec is None and topology.retry_policies:
            raise StreamsError("a topology with a retry policy needs the driver's codec")
        self.topology = topology
        self._partitions = partitions
        problems = copartition_problems(
            topology, {t: self.partitions(t) for t in topology.topics_read}
        )
        if problems:
            raise TopologyError("; ".join(problems))
        self.codec: Codec = codec if codec is not None else PassThrough()
        self._raw_allowed = codec is not None
        self._time_ms = start_time_ms
        self._read_upto: dict[str, int] = {}
        self._reply_topics: set[str] = set()  # named by requests piped in: replies go there
        self._decoded: dict[tuple[str, int, int], Envelope] = {}
        self.skipped: list[ProcessingFailure] = []
        self._stopped: ProcessingError | None = None
        self.cluster = MemoryCluster(partitions=self.partitions, clock_ms=lambda: self._time_ms)
        for topic in topology.topics_read:
            self.cluster.create_topic(topic, self.partitions(topic))
        self._input = self.cluster.producer({})
        self._failure_topics = failure_topics(topology)
        config = RuntimeConfig(
            bootstrap="memory",
            batch_size=1,  # a commit after every record: stores reach their changelogs
            poll_timeout_s=0,
            commit_interval_s=0,
            state_dir=IN_MEMORY,
            shutdown_timeout_s=0,
        )
        # A share group's topology runs as the worker ``streams run --share`` starts.
        self._runtime = runtime_for(
            topology,
            config,
            codec=self.codec,
            clients=MemoryClients(self.cluster),
            clock=self._clock,
            on_skip=self.skipped.append,
        )
        self._runtime.start()

    # -- input -------------------------------------------------------------------------------
    def pipe(
        self,
        topic: str,
        envelopes: Envelope | Iterable[Envelope],
        *,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Headers | None = None,
    ) -> None:
        """Process ``envelopes`` read from ``topic``, one by one, before returning;
        ``headers`` are added to each record's own (``request_headers`` make a request)."""
        self._check_source(topic)
        items = [envelopes] if isinstance(envelopes, Envelope) else list(envelopes)
        extra = list(headers or [])
        for env in items:
            value, own = self.codec.encode(env)
            key = env.key.encode() if env.key is not None else None
            self._write(
                topic, value, [*own, *extra], key, partition=partition, timestamp_ms=timestamp_ms
            )

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
        self._check_source(topic)
        if not self._raw_allowed:
            raise StreamsError("pipe_raw needs a codec")
        self._write(
            topic, value, list(headers or []), key, partition=partition, timestamp_ms=timestamp_ms
        )

    def advance_time(self, ms: int) -> None:
        """Move the clock forward (each piped record also adds 1 ms).

        It is the record timestamp clock, the clock of stores and dedup windows (advancing
        past a ``ttl`` expires), and of retry tiers: retry records due by then are processed
        before it returns."""
        self._time_ms += ms
        self._drain()

    def _write(
        self,
        topic: str,
        value: bytes | None,
        headers: Headers,
        key: bytes | None,
        *,
        partition: int | None,
        timestamp_ms: int | None,
    ) -> None:
        if self._stopped is not None:
            raise StreamsError(
                f"the driver stopped at a failed record ({self._stopped}), as the runtime "
                "would: make a new driver"
            )
        n = self.partitions(topic)
        if partition is None:
            partition = partition_for(key, n) if key else 0
        elif not 0 <= partition < n:
            raise StreamsError(f"topic {topic!r} has {n} partition(s), not partition {partition}")
        self._reply_topics.update(v.decode() for k, v in headers if k == REPLY_TO and v)
        self._time_ms += 1
        ts = self._time_ms if timestamp_ms is None else timestamp_ms
        self._input.produce(topic, value, key, partition, timestamp=ts, headers=headers)
        self._input.flush()
        self._drain()

    def _drain(self) -> None:
        """Run the runtime's loop until nothing is left to do: a turn that takes no record
        may still resume a retry partition (its due time came) for the next one, or a
        record awaiting an async step."""
        runtime = self._runtime
        turn = runtime.turn
        try:
            while turn(0) or turn(0) or runtime.in_flight:
                pass
        except ProcessingError as exc:
            self._stopped = exc
            raise

    def _clock(self) -> float:
        return self._time_ms / 1000

    # -- failure routing (topologies with a retry policy) ---------------------------------
    @property
    def retried(self) -> list[Route]:
        """Every record written to a retry tier, in write order (topic, headers, ``info``)."""
        return self._routes([t for ft in self._failure_topics for t in ft.retries])

    @property
    def dead_letters(self) -> list[Route]:
        """Every record written to a DLQ, in write order: key, value and headers as on
        the broker, ``info`` the parsed error headers (exception, attempts, step, ...)."""
        return self._routes([ft.dlq for ft in self._failure_topics])

    @property
    def waiting_retries(self) -> int:
        """Retry records not processed yet (``advance_time`` past their due time)."""
        group, waiting = self.topology.app_id, 0
        for ft in self._failure_topics:
            for tier in ft.retries:
                for p in range(self.cluster.partition_count(tier)):
                    done = self.cluster.committed(group, tier, p) or 0
                    waiting += sum(1 for r in self.cluster.records(tier, p) if r.offset >= done)
        return waiting

    def _routes(self, topics: list[str]) -> list[Route]:
        found = sorted(
            (r for t in topics for r in self.cluster.records(t)), key=lambda r: r.sequence
        )
        out = []
        for r in found:
            info = parse_failure_headers(r.headers)
            if info is not None:
                headers = list(r.headers)
                out.append(
                    Route(r.topic, r.partition, r.key, r.value, headers, r.timestamp_ms, info)
                )
        return out

    # -- state -------------------------------------------------------------------------------
    def store(self, name: str, partition: int = 0) -> PartitionTransaction:
        """Store ``name``'s partition ``partition`` as processors see it (to inspect or
        seed). Raises TopologyError for an unknown store or a partition not assigned."""
        state = self._runtime.state
        if name not in self.topology.stores or state is None:
            raise TopologyError(f"topology {self.topology.app_id!r} has no store named {name!r}")
        part = state.stores[name].partitions.get(partition)
        if part is None:
            raise TopologyError(f"store {name!r} has no partition {partition}")
        return part.transaction()

    def table(self, name: str) -> dict[Any, Any]:
        """The values of table ``name`` (its ``Table.name``: an aggregation, or a table
        topic materialised) across every partition: by key, or with windows by ``(key,
        Window)``; closed windows are gone. Raises TopologyError for a name that is no
        table."""
        spec = table_spec(self.topology, name)
        state = self._runtime.state
        assert state is not None  # a topology with a table has stores
        payloads = self._runtime.plan.payloads
        found: dict[Any, Any] = {}
        for part in state.stores[spec.store].partitions.values():
            found.update(read_table(part, spec, payloads))
        return found

    def query(
        self,
        table: str,
        key: str,
        *,
        start_from: datetime | None = None,
        start_to: datetime | None = None,
    ) -> Any | None:
        """The value of ``key`` in ``table``, read as ``Runtime.query`` reads it (what
        ``streams query`` and the query port answer); None when it has none. A windowed
        table: ``key``'s open windows as ``(Window, value)`` pairs, oldest start first,
        those starting between ``start_from`` and ``start_to`` (both included)."""
        return self._runtime.query(table, key, start_from=start_from, start_to=start_to)

    @property
    def duplicates(self) -> int:
        """Records dropped by dedup steps so far."""
        return self._runtime.duplicates

    @property
    def stats(self) -> Stats:
        """The runtime's counters (consumed, produced, skipped, failures...)."""
        return self._runtime.stats

    @property
    def changelog(self) -> MemoryCluster | None:
        """Where the stores wrote their changes (the in-memory cluster: ``records(topic,
        partition)`` of ``<app>-<store>-changelog``); None without stores."""
        return self.cluster if self.topology.stores else None

    # -- output ------------------------------------------------------------------------------
    def records(self, topic: str) -> list[OutputRecord]:
        """Every record written to ``topic`` so far, in write order (does not consume).
        Exactly-once topologies: what read_committed readers see."""
        return [self._output(r) for r in self.cluster.records(topic)]

    def read(self, topic: str) -> list[Envelope]:
        """Envelopes written to ``topic`` since the last ``read`` of it, in write order.
        Raises StreamsError for a topic the topology does not write, nor a request piped in
        names for its reply (a typo would otherwise read as "no output")."""
        known = (self.topology.topics_written, self._reply_topics, self.cluster.topics())
        if not any(topic in names for names in known):
            raise StreamsError(f"topology {self.topology.app_id!r} does not write {topic!r}")
        out = self.cluster.records(topic)
        start = self._read_upto.get(topic, 0)
        self._read_upto[topic] = len(out)
        return [self._output(r).envelope for r in out[start:]]

    def _output(self, record: StoredRecord) -> OutputRecord:
        where = (record.topic, record.partition, record.offset)
        env = self._decoded.get(where)
        if env is None:
            env = self._decoded[where] = self.codec.decode(record.value, record.headers)
        return OutputRecord(
            record.topic,
            record.partition,
            record.offset,
            record.key,
            env,
            record.value,
            list(record.headers),
        )

    def close(self) -> None:
        """Commit and close, as the runtime does when stopped (processors' ``close``)."""
        self._runtime.close(self._stopped)

    def __enter__(self) -> TestDriver:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- internals -----------------------------------------------------------------------
    def _check_source(self, topic: str) -> None:
        if topic not in self.topology.topics_read:
            raise StreamsError(f"topology {self.topology.app_id!r} does not read {topic!r}")

    def partitions(self, topic: str) -> int:
        if isinstance(self._partitions, int):
            return self._partitions
        return self._partitions.get(topic, 1)
