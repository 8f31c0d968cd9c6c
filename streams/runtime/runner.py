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
  rebalances are incremental with both, but for the range assignor on classic); on the
  classic one, with ``static_membership``, the instance is a static member named by its
  slot, so a restart takes its partitions back without a rebalance
  (``streams.runtime.config.group_membership``).
  Records are consumed in batches and processed one at a time, in offset order per
  partition, on this thread; records of one key are never reordered.
- Each record goes through the chain of steps assembled once from the topology (which
  steps, in which order: ``streams.pipeline.chain``). The loop is only: poll the
  consumer, submit each record to the chain, poll the chain (acknowledgements, due
  retries, a due commit).
- At-least-once: an offset is committed only when its record and every record before it
  in its partition are processed and every write they caused is acknowledged. With
  stores every commit is a checkpoint; with ``exactly_once`` a transaction
  (``streams.runtime.commit``).
- Rebalance: on assign, the stores of the new partitions are restored before any of
  their records is processed; reading starts at the committed offsets, which the
  callback reads and hands to the consumer with the assignment (``Partitions.start``;
  ``auto_offset_reset`` for a new group). On revoke, their work is committed, then they
  are released. Lost partitions (the session expired) commit nothing.
- A record whose policy says FAIL is never committed: ``run`` raises ``ProcessingError``
  after committing the others. With a ``RetryPolicy`` failures go through retry topics
  to a DLQ instead, in order per key. An output refused for its record's sake (too
  large, invalid, a topic the app may not write) is that record's failure: the work since
  the last commit is undone and done again without the record, which goes to the DLQ
  (``OutputsRefused``, ``Committer.rewind``). Any other refused write raises
  ``DeliveryError``.
- A broker outage does not stop the runtime: it waits for the broker, undoes the work
  since the last commit and goes on (``streams.runtime.recovery``).
- Clients come from ``clients`` (``KafkaClients`` by default): the ``TestDriver`` runs
  this class on in-memory ones, turn by turn (``start``, ``turn``).
- No per-record INFO logs; errors are logged with app, topic, partition and offset bound.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from streams.client_errors import transient
from streams.codec import Codec
from streams.coordinates import TP
from streams.envelope import CURRENT_CAUSE, CURRENT_SOURCE
from streams.failures.topics import ensure_failure_topics
from streams.logs import get_logger, in_hand
from streams.observability.health import Health
from streams.observability.server import InstanceServer
from streams.pipeline.chain import Intake
from streams.pipeline.commit import Committer
from streams.pipeline.errors import BrokerUnavailable, OutputsRefused, RuntimeFailure
from streams.pipeline.failure import OnSkip
from streams.pipeline.record import Record
from streams.pipeline.stats import Stats
from streams.runtime.assembly import Assembly
from streams.runtime.clients import Clients, KafkaClients
from streams.runtime.config import RuntimeConfig
from streams.runtime.stall import StallWatch
from streams.runtime.topics import prepare_topics
from streams.state import StateManager
from streams.topology import Topology
from streams.topology.execution.plan import Plan
from streams.topology.failure_topics import failure_topics


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
        self.topology, self.config = topology, config
        self.stats, self.health = Stats(), Health()
        self._on_tick, self._last_tick = on_tick, time.monotonic()
        self._stopping = self._started = False
        self._outage: KafkaError | None = None  # every broker lost (``_client_error``)
        self._log = get_logger("streams.runtime", app=topology.app_id)
        made = Assembly(
            topology, config, clients or KafkaClients(config.bootstrap, config.client),
            codec=codec, clock=clock, intake=intake, on_skip=on_skip, stats=self.stats,
            health=self.health, log=self._log, on_error=self._client_error,
            query=self._answer, stopping=lambda: self._stopping,
        )  # fmt: skip
        # What the instance is made of (``streams.runtime.assembly``), in the order it is made.
        self.codec, self.metrics = made.codec, made.metrics  # metrics: None without a port
        self._local = made.local  # slot, stores, crash guard
        self._topics, self._consumer, self._sink = made.topics, made.consumer, made.sink
        self._partitions = made.partitions
        self._chain = made.chain  # the record path, and its committer
        self._committer = made.chain.committer
        self._tables, self._stall, self._recovery = made.tables, made.stall, made.recovery
        self._servers = (made.metrics_server, made.query_server)
        self._parts = made.parts  # beside the loop while ``run`` runs, in start order
        self._held = made.held  # released by ``close``, in this order
        if self.metrics is not None:
            self.metrics.watch(self)  # read at scrape time from now on

    # -- control -------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask ``run`` to finish: safe from signal handlers and other threads."""
        self._stopping = True

    @property
    def state(self) -> StateManager | None:
        """The instance's stores (None when the topology declares none, routes no failures
        and runs at-least-once); ``state.stores[name].partitions`` are the open ones."""
        return self._local.state

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
        for part in self._parts:  # the servers first: /healthz answers while start() blocks
            part.start()
        self.health.running = True
        try:
            self.start()
        except BaseException:
            self._stop_parts()
            raise
        failure: BaseException | None = None
        try:
            while not self._stopping:
                try:
                    self.turn()
                except BrokerUnavailable as exc:  # an outage: wait, rewind, go on
                    self._recovery.recover(exc)
                    self._outage = None  # what the consumer said during it is over
        except KafkaException as exc:  # a client error the loop did not expect
            failure = exc
            raise RuntimeFailure(f"Kafka client error: {exc.args[0]}") from exc
        except BaseException as exc:
            failure = exc
            raise
        finally:
            self.health.running = False
            try:
                self.close(failure)
            finally:
                self._stop_parts()  # the servers answer (not running) until closed

    def _stop_parts(self) -> None:
        self.health.running = False
        for part in reversed(self._parts):
            part.stop()

    @property
    def metrics_port(self) -> int | None:
        """The port metrics are served on while ``run`` runs (the free one picked for 0)."""
        return _bound_port(self._servers[0])

    @property
    def query_port(self) -> int | None:
        """The port tables are queried on (the free one picked for 0), from the start until
        ``run`` returns."""
        return _bound_port(self._servers[1])

    def query(
        self,
        table: str,
        key: str,
        *,
        start_from: datetime | None = None,
        start_to: datetime | None = None,
    ) -> Any | None:
        """The value of ``key`` in ``table`` (an aggregation, or a table topic
        materialised), or None when it has none; ``NotHereError`` when another instance
        owns the key (``streams.runtime.query``). Any thread may call it.

        A windowed table answers ``key``'s open windows, oldest start first, as a list of
        ``(Window, value)`` (empty: none), those starting between ``start_from`` and
        ``start_to`` (both included) when given."""
        return self._tables.get(table, key, start_from=start_from, start_to=start_to)

    def _answer(self, table: str, key: str, params: dict[str, str]) -> tuple[int, dict[str, Any]]:
        return self._tables.answer(table, key, params)

    def start(self) -> None:
        """Before the first turn: check the inputs, create the owned topics, the retry tiers
        and DLQs (``prepare_topics``: the first thing created, once every option was
        checked and the ports bound), prepare commits (changelog topics, the first
        transaction), subscribe. Blocks on the broker; on failure everything the instance
        holds is released before the error propagates."""
        try:
            prepare_topics(self._topics, self.topology)
            for topics in failure_topics(self.topology):
                ensure_failure_topics(self._topics, topics)
            if self._local.stores is not None:
                self._local.stores.start()  # restore progress shown from now on
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
        # The events this turn makes carry the app id from the start (no copy at the sink),
        # and ids derived from the record that made them (the same when work is redone).
        made_by = CURRENT_SOURCE.set(self.topology.app_id)
        caused_by = CURRENT_CAUSE.set(self._chain.attempt.plan.current)
        try:
            return self._turn(wait)
        except OutputsRefused as exc:  # the rest of the batch is read again after the rewind
            self._redo(exc)
            return 1
        finally:
            CURRENT_CAUSE.reset(caused_by)
            CURRENT_SOURCE.reset(made_by)

    def _redo(self, refused: OutputsRefused, exclude: Sequence[TP] = ()) -> None:
        """Outputs were refused for their records' sake: undo the work since the last
        commit and do it again without those records (``Committer.rewind``; the partitions
        in ``exclude`` are leaving). One WARNING for each."""
        self.stats.refusals += 1
        self._log.warning(
            "outputs refused for their records' sake: the work since the last commit is "
            "done again without them (to the DLQ)",
            error=str(refused),
            records=len({r.record for r in refused.refusals}),
        )
        self._committer.rewind(exclude)

    def _turn(self, wait: float | None) -> int:
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
        timeout, which adds the timeout to every record's latency at low rates). Before
        that wait the chain hears it is idle (exactly-once commits early once caught up)."""
        consumer, n = self._consumer, self.config.batch_size
        batch: list[Any] = consumer.consume(n, timeout=0)
        if batch:
            return batch
        self._chain.idle()
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
        guard = self._local.guard
        if guard is not None:
            for po in self._partitions.of(keys):
                po.guard = guard.partition(po.topic, po.partition)
        self.health.restoring = True
        try:
            self._committer.assigned(keys)  # restores the stores (blocks)
            self._partitions.start(keys)  # from the committed offsets read (blocks)
        except BrokerUnavailable:
            # Assigned all the same (librdkafka assigns when the callback fails); the error
            # leaves the consumer's poll for the loop's recovery, which restores the stores.
            self._assigned(keys, started)
            raise
        finally:
            self.health.restoring = False
        self._assigned(keys, started)

    def _assigned(self, keys: list[TP], started: float) -> None:
        self.health.assigned = True
        self._count_partitions()
        self.stats.rebalances += 1
        self.stats.rebalance_seconds += time.monotonic() - started
        self._log.info("partitions assigned", partitions=_names(keys))

    def _on_revoke(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        started = time.monotonic()
        keys = _keys(partitions)
        try:
            self._committer.revoked([k for k in keys if k in self._partitions])
        except OutputsRefused as exc:  # nothing committed: their next owner does it again
            self._redo(exc, exclude=keys)
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

    def _count_partitions(self) -> None:
        """Every partition assigned, and those of the inputs the user named (not the
        repartition topics and retry tiers serving them): what the status line shows."""
        internal = set(self.topology.repartition_topics)
        inputs = set(self.topology.topics_read) - internal
        self.stats.partitions = len(self._partitions)
        self.stats.input_partitions = sum(1 for t, _ in self._partitions if t in inputs)

    def _leave(self, keys: list[TP], *, clean: bool) -> None:
        guard = self._local.guard
        if guard is not None:
            for topic, partition in keys:
                guard.released(topic, partition, clean=clean)
        self._chain.head.revoked(keys)
        self._chain.pauses.forget(keys)
        self._partitions.remove(keys)
        self._sink.forget(keys)
        self._count_partitions()

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
            try:
                self._chain.head.join(self.config.shutdown_timeout_s)
            except Exception as exc:
                # Outputs not all written: the committer finishes as after a failure (else
                # the revoke of leaving the group would commit the transaction with them).
                self._committer.finish(failure or exc)
                raise
            self._committer.finish(failure)
        except OutputsRefused as exc:
            self._log.warning(
                "outputs refused for their records' sake: the work since the last commit "
                "is left for the next start, which does it again without them",
                error=str(exc),
            )
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
        for part in self._held:  # in their order (``Assembly.held``)
            part.close()


def _keys(partitions: list[TopicPartition]) -> list[TP]:
    return [(tp.topic, tp.partition) for tp in partitions]


def _names(keys: list[TP]) -> list[str]:
    return [f"{t}[{p}]" for t, p in keys]


def _bound_port(server: InstanceServer | None) -> int | None:
    return server.port if server is not None and server.bound else None
