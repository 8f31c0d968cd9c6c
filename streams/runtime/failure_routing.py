"""Failure routing inside the native runtime: retry tiers, the DLQ, order through retries.

On when the topology (or one of its steps) has a ``RetryPolicy``. The ``Runtime`` owns one
``FailureRouting`` and calls it at these points, all on its processing thread:

- ``setup()`` before subscribing: creates each input's retry tiers and DLQ (the input's
  partition count) and the waiting room's changelog topic. Blocks on the admin API.
- ``topics``: what to subscribe to (inputs and their retry tiers).
  ``consumer_overrides``: the range assignor, so partition *n* of an input and of its
  retry tiers land on the same instance (the waiting room of *n* lives there).
- ``assigned`` / ``revoked`` from the rebalance callbacks: the waiting room of each input
  partition is restored from its changelog before any record is read (blocks), dropped
  on revoke.
- ``sift(consumer, batch)`` for every batch: retry records not yet due are held (their
  partition is sought back and paused, never slept on); ``resume(consumer)`` every loop
  turn; ``poll_timeout(ceiling)`` shortens the poll wait to the next due time.
- ``process(msg, entry)`` for every record: admits it (process, park behind its key's
  retry, or skip a stale copy), decodes and runs the plan, and on failure writes the
  record to its retry tier or the DLQ under ``entry``. Outputs are buffered per attempt
  (``outbox``, filled by the runtime's emit) and sent only when the attempt succeeds, so a
  success on a retry writes exactly what a first-time success would. A record released
  from the waiting room is processed under the entry of the record that released it.
- ``before_commit(producer, positions)`` before every offset commit: when a waiting room
  changed, every write is acknowledged first, then the room is flushed to its changelog
  and acknowledged, then applied locally; only then may the offsets be committed (state
  may be ahead of the committed offsets after a crash, never ahead of the writes).

Raises nothing of its own on the hot path: failures of user code become routes; a write
the broker refuses surfaces through the sink like any output.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from confluent_kafka import Consumer, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from streams.codec import Codec, DecodeError
from streams.failures.handler import Decision, FailureHandler, RecordLike
from streams.failures.headers import Headers, Stage, parse_failure_headers
from streams.failures.parked import TransactionWaitingStore
from streams.failures.policy import RetryPolicy
from streams.failures.retry_consumer import RetryGate, hold, resume_due
from streams.failures.routing import FailedRecord
from streams.failures.topics import FailureTopics, ensure_failure_topics, partition_count
from streams.runtime.offsets import InFlight
from streams.runtime.sink import OutputSink
from streams.runtime.status import Stats
from streams.state import MemoryBackend, StateManager
from streams.state.store import ChangelogStore
from streams.topology import Plan, Topology
from streams.topology.decoding import decode_source
from streams.topology.policy import StepFailed

Output = tuple[str, bytes | None, bytes, Headers]
"""An output waiting for its record's success: topic, key, value, headers."""


def waiting_store_name(topic: str) -> str:
    """The waiting room of ``topic``'s partitions: changelog ``<app>-<topic>-waiting-changelog``."""
    return f"{topic}-waiting"


def widest_policy(topology: Topology) -> RetryPolicy | None:
    """The policy with the most retry tiers among the topology's and its steps' (the
    topics created and read must cover every step's tiers), or None when routing is off."""
    policies = topology.retry_policies
    return max(policies, key=lambda p: p.tiers) if policies else None


class OriginMessage:
    """A record released from the waiting room or read from a retry tier, presented to
    processors as read from its input topic (``ctx.record`` shows the original position)."""

    __slots__ = ("_headers", "_record")

    def __init__(self, record: RecordLike, headers: Headers) -> None:
        self._record = record
        self._headers = headers

    def _position(self) -> Any:
        info = parse_failure_headers(self._record.headers)
        return info.origin if info is not None else self._record.position

    def topic(self) -> str:
        return str(self._position().topic)

    def partition(self) -> int:
        return int(self._position().partition)

    def offset(self) -> int:
        return int(self._position().offset)

    def timestamp(self) -> tuple[int, int]:
        ts = self._record.timestamp
        return (0, -1) if ts is None else (1, ts)

    def key(self) -> bytes | None:
        return self._record.key

    def value(self) -> bytes | None:
        return self._record.value

    def headers(self) -> Headers:
        return self._headers


class FailureRouting:
    """The runtime's failure routing for one topology instance. Not thread-safe."""

    def __init__(
        self,
        topology: Topology,
        policy: RetryPolicy,
        *,
        bootstrap: str,
        codec: Codec,
        sink: OutputSink,
        stats: Stats,
        state: StateManager | None = None,
    ) -> None:
        self.topology = topology
        self.codec = codec
        self.sink = sink
        self.stats = stats
        self.inputs = list(topology.topics_read)
        self._bootstrap = bootstrap
        self._widest = widest_policy(topology) or policy
        # The waiting room is state: changelog-backed, restored on assignment.
        self.state = state or StateManager(
            topology.app_id, consumer_config={"bootstrap.servers": bootstrap}
        )
        self._stores: dict[str, ChangelogStore] = {
            topic: self.state.add_store(
                waiting_store_name(topic), MemoryBackend(), source_topic=topic
            )
            for topic in self.inputs
        }
        self.handler = FailureHandler(topology.app_id, policy, store_for=self._store_for)
        self.gate: RetryGate = self.handler.gate
        self.outbox: list[Output] = []
        self.plan: Plan | None = None  # set by the runtime once its plan is built

    # -- setup -----------------------------------------------------------------------------
    def _store_for(self, topic: str, partition: int) -> TransactionWaitingStore:
        store = self._stores[topic]
        return TransactionWaitingStore(lambda: store.partition(partition).transaction())

    def failure_topics(self, topic: str) -> FailureTopics:
        return FailureTopics.for_input(self.topology.app_id, topic, self._widest)

    @property
    def topics(self) -> list[str]:
        """The inputs and every retry tier of each: the subscription."""
        out: list[str] = []
        for topic in self.inputs:
            out.append(topic)
            out.extend(self.failure_topics(topic).retries)
        return out

    @property
    def consumer_overrides(self) -> dict[str, str]:
        return {"partition.assignment.strategy": "range"}

    def setup(self, admin: AdminClient) -> None:
        """Create the retry tiers, DLQs and waiting-room changelogs. Blocks; raises
        ``FailureTopicError`` or a ``StateError`` on a topic that cannot be used."""
        partitions: dict[str, int] = {}
        for topic in self.inputs:
            ensure_failure_topics(admin, self.failure_topics(topic))
            partitions[topic] = partition_count(admin, topic)
        self.state.ensure_changelogs(admin, partitions)

    # -- rebalance -------------------------------------------------------------------------
    def assigned(self, partitions: Sequence[TopicPartition]) -> None:
        """Restore the waiting rooms of newly assigned input partitions (blocks)."""
        for tp in partitions:
            if tp.topic in self._stores and tp.partition not in self._stores[tp.topic].partitions:
                # Apply the whole changelog: the room may be ahead of the committed offsets
                # and the handler sorts out records read again.
                self.state.assign(tp.topic, tp.partition, None)

    def revoked(self, partitions: Sequence[tuple[str, int]]) -> None:
        """Forget rooms and holds of revoked (or lost) partitions."""
        self.handler.revoked(partitions)
        for topic, partition in partitions:
            if topic in self._stores:
                self.state.revoke(topic, partition)

    # -- the poll loop ---------------------------------------------------------------------
    def sift(self, consumer: Consumer, batch: list[Message]) -> list[Message]:
        """The records to process now; pauses retry partitions whose head is not due."""
        sifted = self.gate.sift(batch)
        hold(consumer, sifted.held)
        return sifted.ready

    def resume(self, consumer: Consumer) -> None:
        resume_due(consumer, self.gate)

    def poll_timeout(self, ceiling: float) -> float:
        return self.gate.poll_timeout(ceiling)

    # -- per record ------------------------------------------------------------------------
    def process(self, msg: Message, entry: InFlight) -> None:
        """Admit, process and route one consumed record (see the module docstring)."""
        admission = self.handler.on_record(FailedRecord.from_message(msg))
        if admission.decision is not Decision.PROCESS:
            # PARK: the room's change is flushed before this offset commits (before_commit).
            return
        record = admission.record
        while record is not None:
            record = self._attempt(record, entry)

    def _attempt(self, record: RecordLike, entry: InFlight) -> RecordLike | None:
        """One processing attempt; returns the next record of the key to process now."""
        handler, plan = self.handler, self.plan
        assert plan is not None
        retried = bool(record.headers) and parse_failure_headers(record.headers) is not None
        if retried:
            topic = handler.origin_topic(record)
            headers: Headers = handler.clean_headers(record)
        else:
            topic, headers = record.position.topic, record.headers
        outbox = self.outbox
        outbox.clear()
        try:
            env = decode_source(self.codec, plan.sources[topic], record.value, headers)
        except DecodeError as exc:
            return self._route(record, exc, Stage.DECODE, "decode", None, entry=entry)
        plan.current.message = OriginMessage(record, headers)
        try:
            plan.entries[topic](env)
        except StepFailed as exc:
            outbox.clear()  # a failed attempt writes nothing: its retry writes it all
            policy = self.topology.retry_for(exc.step)
            return self._route(record, exc.error, Stage.PROCESS, exc.step, policy, entry=entry)
        send = self.sink.send
        for out_topic, key, value, out_headers in outbox:
            send(out_topic, key=key, value=value, headers=out_headers, entry=entry)
        self.stats.produced += len(outbox)
        outbox.clear()
        nxt = handler.on_success(record)
        if retried:  # counted as recovered
            self.stats.failures = handler.metrics.snapshot()
        return nxt

    def _route(
        self,
        record: RecordLike,
        exc: BaseException,
        stage: Stage,
        step: str,
        policy: RetryPolicy | None,
        *,
        entry: InFlight,
    ) -> RecordLike | None:
        route, nxt = self.handler.on_failure(record, exc, stage=stage, step=step, policy=policy)
        self.sink.send(
            route.topic,
            key=route.key,
            value=route.value,
            headers=route.headers,
            partition=route.partition,
            entry=entry,
        )
        self.stats.failures = self.handler.metrics.snapshot()
        return nxt

    # -- durability ------------------------------------------------------------------------
    def before_commit(self, producer: Producer, positions: dict[tuple[str, int], int]) -> None:
        """Make the changed waiting rooms durable; call before committing input offsets.

        Does nothing while no room changed (no failure since the last commit). Otherwise
        blocks on two producer flushes (the writes, then the changelog records); raises
        ``ChangelogWriteError`` if a changelog record was refused (commit nothing then).
        """
        changed = {
            (topic, partition): positions.get((topic, partition), 0)
            for topic, store in self._stores.items()
            for partition, part in store.partitions.items()
            if part.transaction().updates
        }
        if not changed:
            return
        producer.flush()  # the retry copies the room points at exist before the room says so
        self.state.flush(producer, changed)
        producer.flush()
        self.state.check_delivered()
        self.state.apply()

    def close(self) -> None:
        self.state.close()
