"""Failure routing inside the native runtime: retry tiers, the DLQ, order through retries.

On when the topology (or one of its steps) has a ``RetryPolicy``. The ``Runtime`` owns one
``FailureRouting`` and calls it at these points, all on its processing thread:

- ``setup()`` before subscribing: creates each input's retry tiers and DLQ (the input's
  partition count). Blocks on the admin API.
- ``topics``: what to subscribe to (inputs and their retry tiers).
  ``consumer_overrides``: the range assignor, so partition *n* of an input and of its
  retry tiers land on the same instance (the waiting room of *n* lives there).
- ``revoked`` from the rebalance callbacks: the rooms and holds of those partitions are
  forgotten (their stores move with the runtime's other stores).
- ``sift(consumer, batch)`` for every batch: retry records not yet due are held (their
  partition is sought back and paused, never slept on); ``resume(consumer)`` every loop
  turn; ``poll_timeout(ceiling)`` shortens the poll wait to the next due time.
- ``process(msg, entry)`` for every record: admits it (process, park behind its key's
  retry, or skip a stale copy), decodes and runs the plan, and on failure writes the
  record to its retry tier or the DLQ under ``entry``. Outputs are buffered per attempt
  (``outbox``, filled by the runtime's emit) and sent only when the attempt succeeds, so a
  success on a retry writes exactly what a first-time success would. A record released
  from the waiting room is processed under the entry of the record that released it.
- The waiting rooms are stores of the runtime's ``StateManager`` (``<app>-<input>-waiting``,
  memory backend): its Checkpointer restores them on assignment and makes them durable
  with the other stores at each commit: every write acknowledged, then the rooms flushed
  to their changelogs, then the offsets (exactly-once: all in one transaction).
  ``checkpoint_hook`` adds the input positions that a retry record's changes need.

Raises nothing of its own on the hot path: failures of user code become routes; a write
the broker refuses surfaces through the sink like any output.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer, Message, Producer
from confluent_kafka.admin import AdminClient

from streams.codec import Codec, DecodeError
from streams.failures.handler import Decision, FailureHandler, RecordLike
from streams.failures.headers import Headers, Stage, parse_failure_headers
from streams.failures.parked import TransactionWaitingStore
from streams.failures.policy import RetryPolicy
from streams.failures.retry_consumer import RetryGate, hold, resume_due
from streams.failures.routing import FailedRecord
from streams.failures.topics import FailureTopics, ensure_failure_topics
from streams.failures.waiting import waiting_store_name
from streams.runtime.offsets import InFlight, PartitionOffsets
from streams.runtime.sink import OutputSink
from streams.runtime.status import Stats
from streams.state import MemoryBackend, StateManager
from streams.state.store import ChangelogStore
from streams.topology import Plan, Topology
from streams.topology.decoding import decode_source
from streams.topology.policy import StepFailed

TP = tuple[str, int]
BeforeCommit = Callable[[Producer, dict[TP, int]], None]
Output = tuple[str, bytes | None, bytes, Headers]
"""An output waiting for its record's success: topic, key, value, headers."""


def widest_policy(topology: Topology) -> RetryPolicy | None:
    """The policy with the most retry tiers among the topology's and its steps' (the
    topics created and read must cover every step's tiers), or None when routing is off."""
    policies = topology.retry_policies
    return max(policies, key=lambda p: p.tiers) if policies else None


_MISSING: Any = object()


class _Savepoint(dict[bytes, Any]):
    """A store transaction's ``updates`` that can undo one attempt's writes.

    Installed in place of ``PartitionTransaction.updates`` (same contents) the first time
    a partition's transaction meets an attempt; while ``log`` is set, the first write of
    each key records what it replaced, so ``rollback`` restores the transaction as it was
    before the attempt (a failed attempt changes no store: its retry must not find, say,
    its own id already marked seen by dedup). One dict lookup per write while logging.
    """

    __slots__ = ("log",)

    def __init__(self, base: dict[bytes, Any]) -> None:
        super().__init__(base)
        self.log: dict[bytes, Any] | None = None

    def __setitem__(self, key: bytes, value: Any) -> None:
        log = self.log
        if log is not None and key not in log:
            log[key] = self.get(key, _MISSING)
        super().__setitem__(key, value)

    def rollback(self) -> None:
        for key, old in (self.log or {}).items():
            if old is _MISSING:
                self.pop(key, None)
            else:
                super().__setitem__(key, old)
        self.log = None


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
        codec: Codec,
        sink: OutputSink,
        stats: Stats,
        state: StateManager,
    ) -> None:
        self.topology = topology
        self.codec = codec
        self.sink = sink
        self.stats = stats
        self.inputs = list(topology.topics_read)
        self._widest = widest_policy(topology) or policy
        # The waiting room is state: changelog-backed, restored on assignment.
        self.state = state
        self._stores: dict[str, ChangelogStore] = {
            topic: self.state.add_store(
                waiting_store_name(topic), MemoryBackend(), source_topic=topic
            )
            for topic in self.inputs
        }
        waiting = set(map(id, self._stores.values()))
        self._user_stores = [s for s in state.stores.values() if id(s) not in waiting]
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
        """Create the retry tiers and DLQs (the Checkpointer creates the rooms' changelogs).
        Blocks; raises ``FailureTopicError`` on a topic that cannot be used."""
        for topic in self.inputs:
            ensure_failure_topics(admin, self.failure_topics(topic))

    # -- rebalance -------------------------------------------------------------------------
    def revoked(self, partitions: Sequence[tuple[str, int]]) -> None:
        """Forget rooms and holds of revoked (or lost) partitions."""
        self.handler.revoked(partitions)

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
        plan.current.message = origin = OriginMessage(record, headers)
        savepoints = self._savepoints(origin.partition())
        try:
            plan.entries[topic](env)
        except StepFailed as exc:
            outbox.clear()  # a failed attempt writes nothing: its retry writes it all
            for savepoint in savepoints:
                savepoint.rollback()
            policy = self.topology.retry_for(exc.step)
            return self._route(record, exc.error, Stage.PROCESS, exc.step, policy, entry=entry)
        for savepoint in savepoints:
            savepoint.log = None
        send = self.sink.send
        for out_topic, key, value, out_headers in outbox:
            send(out_topic, key=key, value=value, headers=out_headers, entry=entry)
        self.stats.produced += len(outbox)
        outbox.clear()
        nxt = handler.on_success(record)
        if retried:  # counted as recovered
            self.stats.failures = handler.metrics.snapshot()
        return nxt

    def _savepoints(self, partition: int) -> list[_Savepoint]:
        """Start logging the writes of an attempt to the topology's own stores."""
        if not self._user_stores:
            return []
        out = []
        for store in self._user_stores:
            part = store.partitions.get(partition)
            if part is None:
                continue
            tx = part.transaction()
            updates = tx.updates
            if not isinstance(updates, _Savepoint):
                updates = tx.updates = _Savepoint(updates)
            updates.log = {}
            out.append(updates)
        return out

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
            timestamp=route.timestamp,
            entry=entry,
        )
        self.stats.failures = self.handler.metrics.snapshot()
        return nxt

    # -- durability ------------------------------------------------------------------------
    def checkpoint_hook(self, partitions: Mapping[TP, PartitionOffsets]) -> BeforeCommit:
        """For the runtime's Checkpointer (``before_commit``): a room changed by a record of
        a retry tier belongs to an input partition that may have no new position; it is
        added at its committed offset, so the change is flushed with this checkpoint
        before the retry record's offset commits. ``partitions``: the runtime's map."""

        def add_positions(_producer: Producer, positions: dict[TP, int]) -> None:
            for tp in self._changed():
                po = partitions.get(tp)
                if tp not in positions and po is not None and po.committed is not None:
                    positions[tp] = po.committed

        return add_positions

    def _changed(self) -> list[TP]:
        return [
            (topic, partition)
            for topic, store in self._stores.items()
            for partition, part in store.partitions.items()
            if part.transaction().updates
        ]
