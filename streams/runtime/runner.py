"""The native runtime: one instance of a topology on Kafka.

Contract and timing:

- ``run()`` blocks until ``stop()`` is called (from a signal handler or another thread) or
  a record fails with policy FAIL; it then finishes the record in hand (the rest of its
  batch is left for the next owner: a slow step times a batch's length), flushes,
  commits and closes.
- The consumer group is the app id, with cooperative-sticky assignment: start more
  instances to scale out (with failure routing: the range assignor, so partition *n* of
  an input and of its retry tiers land on the same instance, where its waiting room is).
  The group protocol is the user's (``group.protocol``: classic or consumer, KIP-848;
  rebalances are incremental with both); on the classic one, with ``static_membership``,
  the instance is a static member named by its slot, so a restart takes its partitions
  back without a rebalance (``streams.runtime.config.group_membership``).
  Records are consumed in batches and processed one at a time, in offset order per
  partition, on this thread; records of one key are never reordered.
- Each record goes through the chain of steps assembled once from the topology
  (``streams.pipeline.chain``): retry gate, tracking, the failure policy around decode
  and the plan, produce, commit. The loop is only: poll the consumer, submit each record
  to the chain, poll the chain (acknowledgements, due retries, a due commit).
- At-least-once: an offset is committed only when its record and every record before it
  in its partition are processed and every write they caused is acknowledged. With
  stores every commit is a checkpoint; with ``exactly_once`` a transaction
  (``streams.runtime.commit``).
- Rebalance: on assign, the stores of the new partitions are restored before any of
  their records is processed; reading starts at the committed offsets
  (``auto_offset_reset`` for a new group). On revoke, their work is committed, then they
  are released. Lost partitions (the session expired) commit nothing.
- A record whose policy says FAIL is never committed: ``run`` raises ``RecordFailed``
  after committing the others. With a ``RetryPolicy`` failures go through retry topics
  to a DLQ instead, in order per key. A refused output raises ``DeliveryError``.
- A broker outage does not stop the runtime: it waits for the broker, undoes the work
  since the last commit and goes on (``streams.runtime.recovery``).
- Clients come from ``clients`` (``KafkaClients`` by default): the ``TestDriver`` runs
  this class on in-memory ones, turn by turn (``start``, ``turn``).
- No per-record INFO logs; errors are logged with app, topic, partition and offset bound.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from streams.client_errors import transient
from streams.codec import Codec
from streams.coordinates import TP
from streams.failures.topics import ensure_failure_topics
from streams.logs import get_logger, in_hand
from streams.observability.health import Health
from streams.observability.server import InstanceServer, load_metrics
from streams.pipeline.chain import Intake, build_chain
from streams.pipeline.commit import Committer
from streams.pipeline.errors import BrokerUnavailable, RuntimeFailure
from streams.pipeline.failure import (
    OnSkip,
    failure_handler,
    failure_topics,
    needs_range_assignor,
)
from streams.pipeline.offsets import Partitions
from streams.pipeline.produce import OutputSink
from streams.pipeline.record import Record
from streams.pipeline.stats import Stats
from streams.runtime.clients import Clients, KafkaClients
from streams.runtime.commit import CommitContext, make_committer
from streams.runtime.config import RuntimeConfig
from streams.runtime.errors import RecordFailed
from streams.runtime.query import Tables, client_id
from streams.runtime.recovery import Recovery
from streams.runtime.stall import PartitionEnds, StallWatch
from streams.runtime.state import (
    RuntimeState,
    claim_slot,
    crash_guard,
    identity,
    needs_state,
    processing_guarantee,
    transactional_id,
)
from streams.state import StateManager
from streams.topology import Topology
from streams.topology.plan import Plan
from streams.topology.policy import ProcessingError

if TYPE_CHECKING:
    from streams.observability.metrics import RuntimeMetrics


class Runtime:
    """Runs ``topology`` until stopped. Not thread-safe except ``stop()``.

    ``clock``: seconds since the epoch for dedup windows and retry due times; ``intake``:
    steps put before the chain's own; ``on_skip``: called with each record a SKIP policy
    let go (besides the count and the WARNING)."""

    def __init__(
        self,
        topology: Topology,
        config: RuntimeConfig,
        *,
        codec: Codec | None = None,
        on_tick: Callable[[Stats], None] | None = None,
        clients: Clients | None = None,
        clock: Callable[[], float] = time.time,
        intake: Sequence[Intake] = (),
        on_skip: OnSkip | None = None,
    ) -> None:
        if codec is None:
            from streams.codec import AvroCodec  # noqa: PLC0415 - loads the catalog once
            from streams.schemas import default_catalog  # noqa: PLC0415

            codec = AvroCodec(default_catalog())
        clients = clients or KafkaClients(config.bootstrap, config.client)
        self.topology = topology
        self.config = config
        self.codec = codec
        self.stats = Stats()
        self._on_tick = on_tick
        self._stopping = False
        self._started = False
        self._last_tick = time.monotonic()
        self.health = Health()
        app = topology.app_id
        # Metrics: decided here, once; without a port nothing of them is on the record path.
        self.metrics: RuntimeMetrics | None = None
        stats_settings: dict[str, Any] = {}
        if config.metrics_port is not None:
            self.metrics = metrics = load_metrics().RuntimeMetrics(app, config.instance_id)
            stats_settings = metrics.client_settings("producer")
            intake = (*intake, metrics.measure)
            on_skip = metrics.count_skipped(on_skip)
        self._log = log = get_logger("streams.runtime", app=app)
        guarantee = processing_guarantee(topology, config)
        self._state: RuntimeState | None = None
        stateful = needs_state(topology, guarantee)
        # A static member is named by its slot, so a stateless instance claims one too.
        self._slot = claim_slot(app, config) if stateful or config.static_membership else None
        if stateful:
            self._state = RuntimeState.open(topology, config, self._slot, clients.consumer, clock)
        state = self._state.manager if self._state is not None else None
        self._guard = crash_guard(app, config, self._state)
        handler = failure_handler(topology, state)  # adds the waiting rooms to ``state``
        tid = None
        if guarantee == "exactly_once":
            tid = transactional_id(app, config, self._slot)

        def make_producer() -> Any:
            return clients.producer({**config.producer_config(tid), **stats_settings})

        consumer_config = {
            **config.consumer_config(
                app,
                range_assignor=needs_range_assignor(topology),
                group_instance_id=identity(app, config, self._slot),
            ),
            "error_cb": self._client_error,
        }
        # The query port is bound now: the consumer advertises it to the group.
        self._query_server: InstanceServer | None = None
        if config.query_port is not None:
            self._query_server = InstanceServer(
                config.query_port, self.health, query=self._answer
            ).bind()
            endpoint = config.advertise or f"127.0.0.1:{self._query_server.port}"
            consumer_config = {"client.id": client_id(app, endpoint), **consumer_config}
        if self.metrics is not None:
            consumer_config.update(self.metrics.client_settings("consumer"))
        self._outage: KafkaError | None = None
        self._topics = config.topics(clients.admin())
        self._consumer = consumer = clients.consumer(consumer_config)
        self._sink = sink = OutputSink(make_producer())
        self._partitions = partitions = Partitions(
            consumer,
            auto_offset_reset=config.auto_offset_reset,
            timeout=config.shutdown_timeout_s,
        )
        # The stall watch's view of the partitions (a step refreshes it; none when off).
        ends = PartitionEnds(partitions, consumer, every_s=min(config.stall_after_s / 4, 5.0))
        if config.stall_after_s > 0:
            intake = (*intake, ends.step)
        context = CommitContext(
            consumer, self._topics, sink, make_producer, partitions, config.shutdown_timeout_s, log
        )
        self._committer = committer = make_committer(context, state, tid)
        if self.metrics is not None:
            self._committer = committer = self.metrics.timed(committer)
        self._chain = build_chain(
            topology,
            codec=codec,
            state=state,
            handler=handler,
            sink=sink,
            partitions=partitions,
            committer=committer,
            consumer=consumer,
            stats=self.stats,
            log=log,
            clock=clock,
            commit_interval_s=config.commit_interval_s,
            on_skip=on_skip,
            intake=intake,
            step_timer=self.metrics.steps if self.metrics is not None else None,
            shutdown_timeout_s=config.shutdown_timeout_s,
            max_held=config.buffered_per_partition,
        )
        self._committer = committer = self._chain.committer  # with concurrency, wrapped
        self._tables = Tables(topology, state, self.plan.payloads, self._topics.partition_count)
        gate = self._chain.gate
        if gate is not None:  # a retry tier held until its head is due: waiting, not stalled
            ends.waiting = gate.is_held
        self._stall = StallWatch(
            self._chain.attempt.plan.current,
            config.stall_warning_s,
            log,
            after_s=config.stall_after_s,
            progress=ends,
        )
        self.health.register(self._stall)  # a stalled partition: /readyz not ready
        self._recovery = Recovery(
            consumer=consumer,
            committer=committer,
            stopping=lambda: self._stopping,
            log=log,
        )
        self._server: InstanceServer | None = None
        if self.metrics is not None:
            self.metrics.watch(self)

    # -- control -------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask ``run`` to finish: safe from signal handlers and other threads."""
        self._stopping = True

    @property
    def state(self) -> StateManager | None:
        """The instance's stores (None when the topology declares none, routes no failures
        and runs at-least-once); ``state.stores[name].partitions`` are the open ones."""
        return self._state.manager if self._state is not None else None

    @property
    def stall(self) -> StallWatch:
        """The stall watch: ``stalled_partitions()`` (a metric), ``unready()`` (/readyz)."""
        return self._stall

    @property
    def assignment(self) -> list[TP]:
        return sorted(self._partitions)

    @property
    def committer(self) -> Committer:
        return self._committer

    @property
    def in_flight(self) -> int:
        """Records started and not finished: awaiting async steps with concurrency on (the
        ``TestDriver`` turns until none is)."""
        return self._chain.in_flight

    @property
    def held(self) -> int:
        """Records held with concurrency on: in flight, waiting for their key or a place,
        or finished ahead of one that is not (``streams_records_held``). Any thread."""
        return self._chain.held

    def outstanding_writes(self) -> int:
        """Writes queued or in flight, not acknowledged yet (0: every write is)."""
        return len(self._sink.producer)

    @property
    def plan(self) -> Plan:
        """The compiled topology the chain runs."""
        return self._chain.attempt.plan

    @property
    def duplicates(self) -> int:
        """Records dropped by the topology's dedup steps so far."""
        return self._chain.attempt.duplicates

    def run(self) -> None:
        """Consume, process and commit until stopped. Raises RuntimeFailure on failure."""
        # Before the start: /healthz and /readyz answer while it blocks.
        if self.metrics is not None and self.config.metrics_port is not None:
            self._server = InstanceServer(
                self.config.metrics_port,
                self.health,
                exposition=self.metrics.exposition,
                query=self._answer,
            ).start()
        if self._query_server is not None:
            self._query_server.start()
        self.health.running = True
        try:
            self.start()
        except BaseException:
            self._stop_serving()
            raise
        failure: BaseException | None = None
        self._stall.start()
        try:
            while not self._stopping:
                try:
                    self.turn()
                except BrokerUnavailable as exc:  # an outage: wait, rewind, go on
                    self._recovery.recover(exc)
                    self._outage = None  # what the consumer said during it is over
        except ProcessingError as exc:
            failure = exc
            raise RecordFailed(str(exc)) from exc.failure.error
        except KafkaException as exc:  # a client error the loop did not expect
            failure = exc
            raise RuntimeFailure(f"Kafka client error: {exc.args[0]}") from exc
        except BaseException as exc:
            failure = exc
            raise
        finally:
            self._stall.stop()
            self.health.running = False
            try:
                self.close(failure)
            finally:
                self._stop_serving()

    def _stop_serving(self) -> None:
        self.health.running = False
        for server in (self._server, self._query_server):
            if server is not None:
                server.stop()
        self._server = self._query_server = None

    @property
    def metrics_port(self) -> int | None:
        """The port metrics are served on while ``run`` runs (the free one picked for 0)."""
        return self._server.port if self._server is not None else None

    @property
    def query_port(self) -> int | None:
        """The port tables are queried on (the free one picked for 0)."""
        return self._query_server.port if self._query_server is not None else None

    def query(self, table: str, key: str) -> Any | None:
        """The value of ``key`` in ``table`` (an aggregation without windows, or a table
        topic materialised), or None when it has none; ``NotHereError`` when another
        instance owns the key (``streams.runtime.query``). Any thread may call it."""
        return self._tables.get(table, key)

    def _answer(self, table: str, key: str) -> tuple[int, dict[str, Any]]:
        return self._tables.answer(table, key)

    def start(self) -> None:
        """Before the first turn: create the retry tiers and DLQs, prepare commits (changelog
        topics, the first transaction), subscribe. Blocks on the broker; on failure
        everything the instance holds is released before the error propagates."""
        try:
            for topics in failure_topics(self.topology):
                ensure_failure_topics(self._topics, topics)
            if self._state is not None:
                self._state.start()
            self._committer.start()
        except BaseException:  # nothing started: release what the instance holds
            self._release()
            raise
        self._consumer.subscribe(
            self._chain.topics,
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )
        self._started = True
        self._log.info("started", topics=self.topology.topics_read)

    # -- the loop --------------------------------------------------------------------------
    def turn(self, wait: float | None = None) -> int:
        """One turn of the loop: take the records at hand (waiting up to ``wait`` seconds,
        default ``poll_timeout_s``, when there are none), submit each to the chain, poll
        the chain. Returns how many records were taken. Raises what the chain raises."""
        in_hand(self._chain.attempt.plan.current)  # log lines of this turn name its records
        batch = self._next_batch(self.config.poll_timeout_s if wait is None else wait)
        head, record = self._chain.head, Record.of
        for msg in batch:
            if self._stopping:  # the rest of the batch is read again after the commit
                break
            err = msg.error()
            if err is not None:
                self._consumer_error(err)
                continue
            head.submit(record(msg))
        head.poll()
        if self._outage is not None:
            outage, self._outage = self._outage, None
            # The error may be stale: reported during an outage already recovered from,
            # it is served by the first poll after. Only a cluster that does not answer
            # now is an outage (work the old one broke fails on its own, and is recovered).
            if not self._recovery.broker_answers():
                raise BrokerUnavailable(f"the consumer lost every broker: {outage.str()}")
        if self._on_tick is not None:
            self._tick()
        return len(batch)

    def _next_batch(self, wait: float) -> list[Any]:
        """What is already fetched, up to ``batch_size``; when nothing is, wait up to
        ``wait`` for one record (``consume`` alone would wait for a full batch or the
        timeout, which adds the timeout to every record's latency at low rates)."""
        consumer, n = self._consumer, self.config.batch_size
        batch: list[Any] = consumer.consume(n, timeout=0)
        if batch:
            return batch
        first = consumer.poll(self._chain.poll_timeout(wait))
        if first is None:
            return []
        return [first, *consumer.consume(n - 1, timeout=0)] if n > 1 else [first]

    def _client_error(self, err: KafkaError) -> None:
        """librdkafka's errors that belong to no record (``error_cb``, served inside
        ``consume``/``poll``): every broker lost is an outage even with nothing in flight
        to fail, recovered like any other at the end of the turn."""
        if err.code() == KafkaError._ALL_BROKERS_DOWN:
            self._outage = err

    def _consumer_error(self, err: KafkaError) -> None:
        if err.code() == KafkaError._PARTITION_EOF:
            return
        if err.fatal() or not (err.retriable() or transient(err)):
            raise RuntimeFailure(f"consumer error: {err.str()}")
        self._log.warning("consumer error", error=err.str())

    # -- rebalance -------------------------------------------------------------------------
    def _on_assign(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        if not partitions:
            # Incremental rebalances (cooperative-sticky, and every one on the consumer
            # protocol) end a revoke with an empty assignment: nothing assigned, nothing to log.
            self.health.assigned = True
            return
        started = time.monotonic()
        keys = _keys(partitions)
        self._partitions.assign(keys)
        if self._guard is not None:
            for po in self._partitions.of(keys):
                po.guard = self._guard.partition(po.topic, po.partition)
        self.health.restoring = True
        try:
            self._committer.assigned(keys)  # restores the stores (blocks)
        finally:
            self.health.restoring = False
        self.health.assigned = True
        self.stats.partitions = len(self._partitions)
        self.stats.rebalances += 1
        self.stats.rebalance_seconds += time.monotonic() - started
        self._log.info("partitions assigned", partitions=_names(keys))

    def _on_revoke(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        started = time.monotonic()
        keys = _keys(partitions)
        self._committer.revoked([k for k in keys if k in self._partitions])
        self._leave(keys, clean=True)
        self.stats.rebalance_seconds += time.monotonic() - started
        self._log.info("partitions revoked", partitions=_names(keys))

    def _on_lost(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        started = time.monotonic()
        keys = _keys(partitions)
        self._committer.lost([k for k in keys if k in self._partitions])
        self._leave(keys, clean=False)
        self.stats.partitions_lost += len(keys)
        self.stats.rebalance_seconds += time.monotonic() - started
        self._log.warning("partitions lost", partitions=_names(keys))

    def _leave(self, keys: list[TP], *, clean: bool) -> None:
        if self._guard is not None:
            for topic, partition in keys:
                self._guard.released(topic, partition, clean=clean)
        self._chain.head.revoked(keys)
        self._chain.pauses.forget(keys)
        self._partitions.remove(keys)
        self.stats.partitions = len(self._partitions)

    # -- status ----------------------------------------------------------------------------
    def _tick(self) -> None:
        now = time.monotonic()
        if now - self._last_tick < self.config.status_interval_s:
            return
        self._last_tick = now
        self.stats.duplicates = self.duplicates
        self.stats.lag = self._lag()
        if self._on_tick is not None:
            self._on_tick(self.stats)

    def _lag(self) -> int | None:
        lag = self.partition_lag()
        return self.stats.lag if lag is None else sum(lag.values())

    def partition_lag(self) -> dict[TP, int] | None:
        """Records after the consumer's position in each assigned partition whose position
        and (cached) high watermark are known; None when the consumer cannot say. Runtime
        thread only."""
        tps = [TopicPartition(t, p) for t, p in self._partitions]
        lag: dict[TP, int] = {}
        if not tps:
            return lag
        try:
            for tp in self._consumer.position(tps):
                _low, high = self._consumer.get_watermark_offsets(tp, cached=True)
                if high >= 0 and tp.offset >= 0:
                    lag[(tp.topic, tp.partition)] = max(high - tp.offset, 0)
        except KafkaException:
            return None
        return lag

    # -- shutdown --------------------------------------------------------------------------
    def close(self, failure: BaseException | None = None) -> None:
        """Finish: flush, commit what is done (never a failed record), leave the group,
        close. ``failure``: what stopped the run (exactly-once: the transaction aborts)."""
        try:
            self._chain.head.join(self.config.shutdown_timeout_s)
            self._committer.finish(failure)
        except Exception:
            self._log.exception("final commit failed")
        finally:
            self._release()
            if failure is None and self._started:
                self._log.info(
                    "stopped",
                    consumed=self.stats.consumed,
                    produced=self.stats.produced,
                    duplicates=self.duplicates,
                )

    def _release(self) -> None:
        self._chain.attempt.close()
        self._consumer.close()  # leaves the group: the revoke callback commits again
        if self._guard is not None:
            self._guard.close()  # an orderly end: no partition died with a record in hand
        self._committer.close()
        if self._state is not None:
            self._state.close()  # stores closed, local copies kept
        if self._slot is not None:
            self._slot.close()


def _keys(partitions: list[TopicPartition]) -> list[TP]:
    return [(tp.topic, tp.partition) for tp in partitions]


def _names(keys: list[TP]) -> list[str]:
    return [f"{t}[{p}]" for t, p in keys]
