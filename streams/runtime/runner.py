"""The native runtime: one instance of a topology on confluent-kafka.

Contract and timing:

- ``run()`` blocks until ``stop()`` is called (from a signal handler or another thread) or
  a record fails with policy FAIL; it then finishes, flushes, commits and closes.
- The consumer group is the app id, with cooperative-sticky assignment: start more
  instances to scale out. Records are consumed in batches and processed one at a time, in
  offset order per partition, on this thread; records of one key are never reordered.
- At-least-once: an offset is committed only when its record and every record before it in
  its partition are processed and every output they caused is acknowledged (idempotent
  producer, ``acks=all``). Commits are asynchronous every ``commit_interval_s``, and
  synchronous on revoke and shutdown.
- Rebalance: on revoke, flush outputs, commit the revoked partitions, then release them.
  On assign, reading starts at the committed offsets (``auto_offset_reset`` for a new
  group). Lost partitions (the session expired) are dropped without a commit.
- A failed record (policy FAIL) is never committed: earlier records are flushed and
  committed, then ``run`` raises ``RecordFailed``. A refused output raises ``DeliveryError``.
- With a ``RetryPolicy`` on the topology (or a step), failures do not stop the runtime: they
  go through retry topics to a DLQ, in order per key (``streams.runtime.failure_routing``);
  outputs of a record are sent once it succeeds.
- State and exactly-once (``streams.runtime.checkpoint``): with stores, assignment
  restores them before processing and every commit is a checkpoint (synchronous: outputs,
  changelog, offsets, then the local stores); with ``exactly_once``, every commit is a
  transaction over outputs, changelog and offsets, aborted and rewound on failure.
- A broker outage (outputs timed out, a transaction that cannot finish) does not stop the
  runtime: it waits for the broker, undoes the work since the last commit and goes on
  (``streams.runtime.recovery``).
- No per-record INFO logs; errors are logged with app, topic, partition and offset bound.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, cast

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from streams.codec import Codec, DecodeError
from streams.envelope import Envelope
from streams.logs import get_logger
from streams.runtime.checkpoint import Checkpointer
from streams.runtime.config import RuntimeConfig
from streams.runtime.errors import RecordFailed, RuntimeFailure
from streams.runtime.failure_routing import FailureRouting, widest_policy
from streams.runtime.offsets import InFlight, PartitionOffsets
from streams.runtime.recovery import BrokerUnavailable, Recovery, rewind_stateless, transient
from streams.runtime.sink import OutputSink
from streams.runtime.status import Stats
from streams.runtime.stores import RuntimeState, processing_guarantee
from streams.state import StateManager
from streams.topology import Plan, Topology
from streams.topology.context import RecordMeta
from streams.topology.decoding import decode_source
from streams.topology.nodes import SinkNode
from streams.topology.policy import ErrorAction, ErrorPolicy, ProcessingFailure, StepFailed, fail

TP = tuple[str, int]


class Runtime:
    """Runs ``topology`` until stopped. Not thread-safe except ``stop()``."""

    def __init__(
        self,
        topology: Topology,
        config: RuntimeConfig,
        *,
        codec: Codec | None = None,
        on_tick: Callable[[Stats], None] | None = None,
    ) -> None:
        if codec is None:
            from streams.codec import AvroCodec  # noqa: PLC0415 - loads the catalog once
            from streams.schemas import default_catalog  # noqa: PLC0415

            codec = AvroCodec(default_catalog())
        self.topology = topology
        self.config = config
        self.codec = codec
        self.stats = Stats()
        self._on_tick = on_tick
        self._stopping = False
        self._log = get_logger("streams.runtime", app=topology.app_id)
        self._partitions: dict[TP, PartitionOffsets] = {}
        self._entry = InFlight(-1)  # the record being processed
        # State and exactly-once (streams.runtime.stores, streams.runtime.checkpoint).
        exactly_once = processing_guarantee(topology, config) == "exactly_once"
        self._state: RuntimeState | None = None
        tid: str | None = None
        # Failure routing keeps its waiting rooms as stores too.
        if topology.stores or exactly_once or topology.retry_policies:
            self._state = RuntimeState.open(topology, config, self._current_partition)
            tid = self._state.slot.transactional_id(topology.app_id) if exactly_once else None
        self._plan = Plan(topology, self._emit, self._state.routed if self._state else None)
        consumer_config = config.consumer_config(topology.app_id)
        self._sink = OutputSink(Producer(config.producer_config(tid)))
        self._routing: FailureRouting | None = None
        if topology.retry_policies:  # failures go through retry topics to a DLQ
            policy = topology.retry or widest_policy(topology)
            assert policy is not None and self._state is not None
            self._routing = FailureRouting(
                topology,
                policy if topology.retry else policy.no_retries(),
                codec=codec,
                sink=self._sink,
                stats=self.stats,
                state=self._state.manager,
            )
            self._routing.plan = self._plan
            consumer_config = {**consumer_config, **self._routing.consumer_overrides}
        self._consumer = Consumer(consumer_config)
        self._make_producer = lambda: Producer(config.producer_config(tid))
        self._recovery = Recovery(
            consumer=self._consumer,
            rewind_all=self._rewind_all,
            stopping=lambda: self._stopping,
            log=self._log,
        )
        self._checkpoints: Checkpointer | None = None
        if self._state is not None:
            self._checkpoints = Checkpointer(
                consumer=self._consumer,
                sink=self._sink,
                partitions=self._partitions,
                state=self._state.manager,
                transactional_id=tid,
                config=config,
                log=self._log,
            )
            if self._routing is not None:
                self._checkpoints.before_commit.append(
                    self._routing.checkpoint_hook(self._partitions)
                )

    # -- control -------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask ``run`` to finish: safe from signal handlers and other threads."""
        self._stopping = True

    @property
    def state(self) -> StateManager | None:
        """The instance's stores (None when the topology declares none and runs
        at-least-once); ``state.stores[name].partitions`` are the open partitions."""
        return self._state.manager if self._state is not None else None

    def _current_partition(self) -> int:
        msg = self._plan.current.message
        return cast(int, msg.partition()) if msg is not None else -1

    @property
    def assignment(self) -> list[TP]:
        return sorted(self._partitions)

    def run(self) -> None:
        """Consume, process and commit until stopped. Raises RuntimeFailure on failure."""
        consumer = self._consumer
        topics = self.topology.topics_read
        if self._routing is not None:
            from streams.admin import admin_client  # noqa: PLC0415 - only with routing

            self._routing.setup(admin_client(self.config.bootstrap))
            topics = self._routing.topics
        if self._checkpoints is not None and self._state is not None:
            from streams.admin import admin_client  # noqa: PLC0415 - only with state

            self._state.start()
            try:
                self._checkpoints.prepare(admin_client(self.config.bootstrap))
            except BaseException:  # nothing started: release what the instance holds
                self._consumer.close()
                self._checkpoints.close()
                self._state.close()
                raise
        consumer.subscribe(
            topics,
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )
        self._log.info("started", topics=self.topology.topics_read)
        failure: BaseException | None = None
        try:
            while True:
                try:
                    self._loop()
                    break
                except BrokerUnavailable as exc:  # an outage: wait, rewind, go on
                    self._recovery.recover(exc)
        except KafkaException as exc:  # a client error the loop did not expect
            failure = exc
            raise RuntimeFailure(f"Kafka client error: {exc.args[0]}") from exc
        except BaseException as exc:
            failure = exc
            raise
        finally:
            self._shutdown(failure)

    # -- the loop --------------------------------------------------------------------------
    def _loop(self) -> None:
        sink, cfg = self._sink, self.config
        process = self._process
        routing = self._routing
        last_commit = last_tick = time.monotonic()
        while not self._stopping:
            batch = self._next_batch()
            if routing is not None:  # retry records wait for their due time, paused
                routing.resume(self._consumer)
                batch = routing.sift(self._consumer, batch)
            for msg in batch:
                err = msg.error()
                if err is not None:
                    self._consumer_error(err)
                    continue
                process(msg)
            sink.poll()
            sink.raise_errors()
            now = time.monotonic()
            if now - last_commit >= cfg.commit_interval_s:
                self._commit(list(self._partitions.values()), asynchronous=True)
                last_commit = now
            if self._on_tick is not None and now - last_tick >= cfg.status_interval_s:
                self._refresh_lag()
                self._on_tick(self.stats)
                last_tick = now

    def _next_batch(self) -> list[Message]:
        """What is already fetched, up to ``batch_size``; when nothing is, wait up to
        ``poll_timeout_s`` for one record (``consume`` alone would wait for a full batch or
        the timeout, which adds the timeout to every record's latency at low rates)."""
        consumer, n = self._consumer, self.config.batch_size
        batch = consumer.consume(n, timeout=0)
        if batch:
            return batch
        wait = self.config.poll_timeout_s
        if self._routing is not None:
            wait = self._routing.poll_timeout(wait)
        first = consumer.poll(wait)
        if first is None:
            return []
        return [first, *consumer.consume(n - 1, timeout=0)] if n > 1 else [first]

    def _process(self, msg: Message) -> None:
        topic = cast(str, msg.topic())
        offsets = self._partitions.get((topic, cast(int, msg.partition())))
        if offsets is None:  # revoked while this batch was in hand: the new owner reads it
            return
        entry = offsets.begin(cast(int, msg.offset()))
        self._entry = entry
        self.stats.consumed += 1
        if self._routing is not None:
            self._routing.process(msg, entry)
            entry.release()
            return
        plan = self._plan
        source = plan.sources[topic]
        try:
            env = decode_source(self.codec, source, msg.value(), cast(Any, msg.headers()))
        except DecodeError as exc:
            self._failed(msg, "decode", exc, None, None)
        else:
            plan.current.message = msg
            try:
                plan.entries[topic](env)
            except StepFailed as exc:
                self._failed(msg, exc.step, exc.error, env, exc.policy)
        entry.release()

    def _emit(self, _sink: SinkNode, topic: str, env: Envelope) -> None:
        value, headers = self.codec.encode(env)
        key = env.key.encode() if env.key is not None else None
        if self._routing is not None:  # sent when the record succeeds, dropped if it fails
            self._routing.outbox.append((topic, key, value, headers))
            return
        self._sink.send(topic, key=key, value=value, headers=headers, entry=self._entry)
        self.stats.produced += 1

    def _failed(
        self,
        msg: Message,
        step: str,
        error: BaseException,
        env: Envelope | None,
        policy: ErrorPolicy | None,
    ) -> None:
        """Apply the error policy. FAIL raises (the record stays uncommitted)."""
        failure = ProcessingFailure(step, error, RecordMeta.from_message(msg), env)
        action = (policy or self.topology.on_error or fail)(failure)
        log = self._log.bind(
            topic=msg.topic(), partition=msg.partition(), offset=msg.offset(), step=step
        )
        if action is ErrorAction.SKIP:
            self.stats.skipped += 1
            log.warning("record skipped", error=f"{type(error).__name__}: {error}")
            return
        log.error("record failed", exc_info=error)
        raise RecordFailed(
            f"step {step!r} failed on {msg.topic()}[{msg.partition()}]@{msg.offset()}: "
            f"{type(error).__name__}: {error}"
        ) from error

    def _consumer_error(self, err: KafkaError) -> None:
        if err.code() == KafkaError._PARTITION_EOF:
            return
        if err.fatal() or not (err.retriable() or transient(err)):
            raise RuntimeFailure(f"consumer error: {err.str()}")
        self._log.warning("consumer error", error=err.str())

    def _rewind_all(self) -> None:
        """Undo the work since the last commit (``streams.runtime.recovery``)."""
        if self._checkpoints is not None:
            self._checkpoints.recover(self._make_producer)
            return
        latest = self.config.auto_offset_reset in ("latest", "end", "largest")
        timeout = self.config.shutdown_timeout_s
        rewind_stateless(
            self._consumer,
            self._sink,
            self._partitions,
            self._make_producer,
            latest=latest,
            timeout=timeout,
        )

    # -- commits -------------------------------------------------------------------------
    def _commit(
        self, partitions: list[PartitionOffsets], *, asynchronous: bool, force: bool = False
    ) -> None:
        """Commit each partition's finished prefix. ``force`` re-sends offsets already sent
        (an asynchronous commit may have failed unseen)."""
        if self._checkpoints is not None:  # stores or exactly-once: a checkpoint
            self._checkpoints.commit(partitions)
            return
        pending = []
        for po in partitions:
            nxt = po.committable() if force else po.pending_commit()
            if nxt is not None:
                pending.append((po, nxt))
        if not pending:
            return
        offsets = [TopicPartition(po.topic, po.partition, nxt) for po, nxt in pending]
        try:
            if asynchronous:
                self._consumer.commit(offsets=offsets, asynchronous=True)
            else:
                self._consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            if err.code() != KafkaError._NO_OFFSET:
                # Nothing is lost: uncommitted records are redelivered (at-least-once).
                self._log.warning("commit failed", error=err.str())
            return
        for po, nxt in pending:
            po.committed = nxt

    def _flush_and_commit(self, partitions: list[PartitionOffsets]) -> None:
        if self._checkpoints is not None:  # it flushes, and knows a dead producer
            self._checkpoints.commit(partitions)
            return
        self._sink.poll()
        left = self._sink.flush(self.config.shutdown_timeout_s)
        if left:
            self._log.error("outputs not acknowledged in time", outstanding=left)
        self._commit(partitions, asynchronous=False, force=True)

    # -- rebalance -------------------------------------------------------------------------
    def _on_assign(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self._partitions[(tp.topic, tp.partition)] = PartitionOffsets(tp.topic, tp.partition)
        if self._checkpoints is not None:  # restores the stores (blocks)
            self._checkpoints.assigned(partitions)
        self.stats.partitions = len(self._partitions)
        self.stats.rebalances += 1
        self._log.info("partitions assigned", partitions=_names(partitions))

    def _on_revoke(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        revoked = [
            self._partitions[key]
            for tp in partitions
            if (key := (tp.topic, tp.partition)) in self._partitions
        ]
        self._flush_and_commit(revoked)
        if self._checkpoints is not None:
            self._checkpoints.release(revoked)
        for po in revoked:
            del self._partitions[(po.topic, po.partition)]
        if self._routing is not None:
            self._routing.revoked([(tp.topic, tp.partition) for tp in partitions])
        self.stats.partitions = len(self._partitions)
        self._log.info("partitions revoked", partitions=_names(partitions))

    def _on_lost(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if self._checkpoints is not None:  # nothing of theirs commits (exactly-once: abort)
            self._checkpoints.lost(partitions)
        for tp in partitions:
            self._partitions.pop((tp.topic, tp.partition), None)
        if self._routing is not None:
            self._routing.revoked([(tp.topic, tp.partition) for tp in partitions])
        self.stats.partitions = len(self._partitions)
        self._log.warning("partitions lost", partitions=_names(partitions))

    def _refresh_lag(self) -> None:
        self.stats.duplicates = self._plan.duplicates
        tps = [TopicPartition(t, p) for t, p in self._partitions]
        if not tps:
            self.stats.lag = 0
            return
        lag = 0
        try:
            for tp in self._consumer.position(tps):
                _low, high = self._consumer.get_watermark_offsets(tp, cached=True)
                if high >= 0 and tp.offset >= 0:
                    lag += max(high - tp.offset, 0)
        except KafkaException:
            return
        self.stats.lag = lag

    # -- shutdown --------------------------------------------------------------------------
    def _shutdown(self, failure: BaseException | None) -> None:
        """Finish: flush, commit what is done, leave the group. Never commits a failed record."""
        try:
            if self._checkpoints is not None:  # exactly-once after a failure: an abort
                self._checkpoints.finish(failure)
            else:
                self._flush_and_commit(list(self._partitions.values()))
        except Exception:
            self._log.exception("final commit failed")
        finally:
            self._plan.close()
            self._consumer.close()  # leaves the group: the revoke callback commits again
            if self._checkpoints is not None and self._state is not None:
                self._checkpoints.close()  # stores closed, local copies kept
                self._state.close()
            if failure is None:
                self._log.info(
                    "stopped",
                    consumed=self.stats.consumed,
                    produced=self.stats.produced,
                    duplicates=self._plan.duplicates,
                )


def _names(partitions: list[TopicPartition]) -> list[str]:
    return [f"{tp.topic}[{tp.partition}]" for tp in partitions]
