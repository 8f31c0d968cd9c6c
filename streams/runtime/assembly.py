"""What one runtime instance is made of, each part built in one place.

``Assembly(topology, config, clients, ...)`` builds the parts of an instance, each once,
on first use: a part asks for the parts it is made with (the consumer asks for the slot,
the query port and the metrics; the chain for the committer, the sink and the
partitions), so each recipe names what it needs and the order follows from them.
``Runtime.__init__`` (``streams.runtime.runner``) takes the parts it keeps, in the order
they are made. Each recipe decides once what its part needs (metrics or none,
exactly-once or not, a stall check or none), so the record path never asks again.

Two kinds of parts have a life of their own; the runtime goes through them in lists
instead of asking of each whether it is there:

- a ``Part`` works on a thread of its own beside the loop while ``Runtime.run`` runs (the
  metrics and query ports' servers, the stall watch): ``start()``, ``stop()``;
- a ``Held`` part is held from the assembly until the instance closes (the processors,
  the consumer, the crash guard, the committer, the stores, the slot): ``close()``.

The order of each list matters: ``Assembly.parts`` and ``Assembly.held`` say why.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from streams.cluster import Topics
from streams.codec import Codec
from streams.config import incremental_rebalances
from streams.failures.handler import FailureHandler
from streams.logs import Logger
from streams.observability.health import Health
from streams.observability.server import InstanceServer, Query, load_metrics
from streams.pipeline.chain import Chain, Intake, build_chain
from streams.pipeline.commit import Committer
from streams.pipeline.crash_guard import CrashGuard
from streams.pipeline.failure import OnSkip, failure_handler, needs_range_assignor
from streams.pipeline.offsets import Partitions
from streams.pipeline.produce import OutputSink
from streams.pipeline.stats import Stats
from streams.record_size import message_max_bytes
from streams.runtime.clients import Clients
from streams.runtime.commit import CommitContext, make_committer
from streams.runtime.config import RuntimeConfig
from streams.runtime.query import Tables, client_id
from streams.runtime.recovery import Recovery
from streams.runtime.slot import InstanceSlot
from streams.runtime.stall import PartitionEnds, StallWatch
from streams.runtime.state import (
    LocalStores,
    claim_slot,
    crash_guard,
    identity,
    needs_state,
    processing_guarantee,
    transactional_id,
)
from streams.state import StateManager
from streams.topology import Topology

if TYPE_CHECKING:
    from streams.observability.metrics import RuntimeMetrics


class Part(Protocol):
    """A part of an instance that works on a thread of its own beside the loop while
    ``Runtime.run`` runs: started before the instance starts, stopped after it has closed
    (``Assembly.parts``)."""

    def start(self) -> object: ...
    def stop(self) -> None: ...


class Held(Protocol):
    """A part an instance holds from its assembly until it closes: ``close()`` releases
    it (``Assembly.held``)."""

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Local:
    """What an instance holds on this machine, each None when it needs none: its slot (its
    directory, and its identity in the cluster), its stores, its crash guard; and, with
    exactly-once, its ``transactional.id``."""

    slot: InstanceSlot | None
    stores: LocalStores | None
    guard: CrashGuard | None
    transactional_id: str | None

    @property
    def state(self) -> StateManager | None:
        """The stores' ``StateManager`` (None without stores)."""
        return self.stores.state if self.stores is not None else None


class Assembly:
    """The parts of one instance of ``topology`` (see the module docstring). From the
    runtime: its ``stats`` and ``health``, its logger, and three callbacks: ``on_error``
    (librdkafka's errors that belong to no record), ``query`` (a table read for a port)
    and ``stopping`` (whether a stop was asked, polled while an outage lasts)."""

    def __init__(
        self,
        topology: Topology,
        config: RuntimeConfig,
        clients: Clients,
        *,
        codec: Codec | None,
        clock: Callable[[], float],
        intake: Sequence[Intake],
        on_skip: OnSkip | None,
        stats: Stats,
        health: Health,
        log: Logger,
        on_error: Callable[[Any], None],
        query: Query,
        stopping: Callable[[], bool],
    ) -> None:
        self.topology, self.config, self._clients = topology, config, clients
        self._codec, self._clock, self._intake, self._on_skip = codec, clock, intake, on_skip
        self.stats, self.health, self.log = stats, health, log
        self._on_error, self._query, self._stopping = on_error, query, stopping

    @cached_property
    def codec(self) -> Codec:
        """The one given, else Avro on the default catalog (loaded here, once)."""
        if self._codec is not None:
            return self._codec
        from streams.codec import AvroCodec  # noqa: PLC0415 - loads the catalog
        from streams.schemas import default_catalog  # noqa: PLC0415

        return AvroCodec(default_catalog())

    @cached_property
    def metrics(self) -> RuntimeMetrics | None:
        """With a metrics port, the instance's metrics; without one None, and nothing of
        them is imported or on the record path."""
        if self.config.metrics_port is None:
            return None
        metrics: RuntimeMetrics = load_metrics().RuntimeMetrics(
            self.topology.app_id, self.config.instance_id
        )
        return metrics

    @cached_property
    def local(self) -> Local:
        """The slot claimed, the stores opened (restored through the instance's consumers)
        and the crash guard, as the guarantee in force needs them."""
        topology, config = self.topology, self.config
        app, guarantee = topology.app_id, processing_guarantee(topology, config)
        stateful = needs_state(topology, guarantee)
        # A static member is named by its slot, so a stateless instance claims one too.
        slot = claim_slot(app, config) if stateful or config.static_membership else None
        stores = None
        if stateful:
            stores = LocalStores.open(topology, config, slot, self._clients.consumer, self._clock)
        tid = transactional_id(app, config, slot) if guarantee == "exactly_once" else None
        return Local(slot, stores, crash_guard(app, config, stores), tid)

    @cached_property
    def handler(self) -> FailureHandler | None:
        """Failure routing's handler (None without it); its waiting rooms are added to the
        stores, so they are restored and committed with them."""
        return failure_handler(self.topology, self.local.state, max_bytes=self.sink.max_bytes)

    @cached_property
    def query_server(self) -> InstanceServer | None:
        """The query port's server (None without ``query_port``), its port bound now: the
        consumer advertises it to the group."""
        config = self.config
        if config.query_port is None:
            return None
        return InstanceServer(
            config.query_port, self.health, query=self._query, access=config.http
        ).bind()

    @cached_property
    def metrics_server(self) -> InstanceServer | None:
        """The metrics port's server (None without metrics), its port bound now: a port
        taken, or another host than 127.0.0.1 without a token, refuses the instance before
        it created anything. It serves no table: whoever scrapes metrics reads no data."""
        metrics, port = self.metrics, self.config.metrics_port
        if metrics is None or port is None:
            return None
        server = InstanceServer(
            port, self.health, exposition=metrics.exposition, access=self.config.http
        )
        return server.bind()

    @cached_property
    def topics(self) -> Topics:
        """The door through which the instance creates and sizes its topics."""
        return self.config.topics(self._clients.admin())

    @cached_property
    def consumer(self) -> Any:
        """The instance's consumer (``consumer_settings``)."""
        return self._clients.consumer(self.consumer_settings)

    @cached_property
    def consumer_settings(self) -> dict[str, Any]:
        """The consumer's librdkafka settings: its group's (``RuntimeConfig.consumer_config``),
        the query endpoint advertised in its client id, librdkafka's statistics for the
        metrics."""
        topology, config, app = self.topology, self.config, self.topology.app_id
        settings = {
            **config.consumer_config(
                app,
                range_assignor=needs_range_assignor(topology),
                group_instance_id=identity(app, config, self.local.slot),
            ),
            "error_cb": self._on_error,
        }
        if self.query_server is not None:
            endpoint = config.advertise or f"127.0.0.1:{self.query_server.port}"
            settings = {"client.id": client_id(app, endpoint), **settings}
        if self.metrics is not None:
            settings.update(self.metrics.client_settings("consumer"))
        return settings

    @cached_property
    def make_producer(self) -> Callable[[], Any]:
        """Makes the instance's producer (and the fresh ones the committer makes after an
        outage), with ``producer_settings``."""

        def make_producer() -> Any:
            return self._clients.producer(dict(self.producer_settings))

        return make_producer

    @cached_property
    def producer_settings(self) -> dict[str, Any]:
        """The producer's librdkafka settings: transactional with exactly-once
        (``RuntimeConfig.producer_config``), librdkafka's statistics for the metrics."""
        metrics = self.metrics
        statistics = metrics.client_settings("producer") if metrics is not None else {}
        return {**self.config.producer_config(self.local.transactional_id), **statistics}

    @cached_property
    def sink(self) -> OutputSink:
        """Where every write goes, through the instance's producer."""
        return OutputSink(self.make_producer(), max_bytes=message_max_bytes(self.producer_settings))

    @cached_property
    def partitions(self) -> Partitions:
        """Where each assigned partition is (positions, committed offsets)."""
        config = self.config
        return Partitions(
            self.consumer,
            auto_offset_reset=config.auto_offset_reset,
            timeout=config.shutdown_timeout_s,
            incremental=incremental_rebalances(self.consumer_settings),
        )

    @cached_property
    def ends(self) -> PartitionEnds:
        """The stall watch's view of the partitions (its step refreshes it when on)."""
        every_s = min(self.config.stall_after_s / 4, 5.0)
        return PartitionEnds(self.partitions, self.consumer, every_s=every_s)

    @cached_property
    def committer(self) -> Committer:
        """What a commit makes durable (``make_committer``: offsets, a checkpoint of the
        stores, or a transaction), timed with metrics."""
        local, config = self.local, self.config
        context = CommitContext(
            self.consumer,
            self.topics,
            self.sink,
            self.make_producer,
            self.partitions,
            config.shutdown_timeout_s,
            self.log,
        )
        # The producer's own setting (a user's -X included); librdkafka's default is 60 s.
        timeout_ms = self.producer_settings.get("transaction.timeout.ms", 60_000)
        committer = make_committer(
            context,
            local.state,
            local.transactional_id,
            transaction_timeout_s=float(timeout_ms) / 1000,
        )
        return self.metrics.timed(committer) if self.metrics is not None else committer

    @cached_property
    def chain(self) -> Chain:
        """The record path (``build_chain``), with what the options put in: the metrics'
        measuring step first, skipped records counted and steps timed; the step that
        refreshes the stall watch's ``ends``. Its ``committer`` is the one to call (with
        concurrency, ``committer`` wrapped)."""
        config, metrics = self.config, self.metrics
        intake, on_skip = self._intake, self._on_skip
        if metrics is not None:
            intake, on_skip = (*intake, metrics.measure), metrics.count_skipped(on_skip)
        if config.stall_after_s > 0:
            intake = (*intake, self.ends.step)
        return build_chain(
            self.topology,
            codec=self.codec,
            state=self.local.state,
            handler=self.handler,
            sink=self.sink,
            partitions=self.partitions,
            committer=self.committer,
            consumer=self.consumer,
            stats=self.stats,
            log=self.log,
            clock=self._clock,
            commit_interval_s=config.commit_interval_s,
            commit_idle_s=config.commit_idle_s if self.local.transactional_id else None,
            on_skip=on_skip,
            intake=intake,
            step_timer=metrics.steps if metrics is not None else None,
            shutdown_timeout_s=config.shutdown_timeout_s,
            max_held=config.buffered_per_partition,
        )

    @cached_property
    def tables(self) -> Tables:
        """The tables ``Runtime.query`` and the ports read."""
        payloads = self.chain.attempt.plan.payloads
        return Tables(self.topology, self.local.state, payloads, self.topics.partition_count)

    @cached_property
    def stall(self) -> StallWatch:
        """The stall watch of the record in hand and of the partitions' progress; a
        stalled partition makes /readyz not ready."""
        chain, ends, config = self.chain, self.ends, self.config
        if chain.gate is not None:  # a retry tier held until its head is due: waiting
            ends.waiting = chain.gate.is_held
        watch = StallWatch(
            chain.attempt.plan.current,
            config.stall_warning_s,
            self.log,
            after_s=config.stall_after_s,
            progress=ends,
        )
        self.health.register(watch)
        return watch

    @cached_property
    def recovery(self) -> Recovery:
        """What rides out a broker outage: waits, then has the committer rewind."""
        return Recovery(
            consumer=self.consumer,
            committer=self.chain.committer,
            stopping=self._stopping,
            log=self.log,
        )

    @cached_property
    def parts(self) -> list[Part]:
        """The parts beside the loop, in the order ``run`` starts them (it stops them in
        reverse): the servers first, so /healthz and /readyz answer while ``start`` blocks
        on the broker, and until the instance has closed; the stall watch last (a start
        has no record in hand and no partition yet)."""
        servers = (self.metrics_server, self.query_server)
        return [*(server for server in servers if server is not None), self.stall]

    @cached_property
    def held(self) -> list[Held]:
        """What the instance holds, in the order ``close`` releases it: the processors
        (their ``close``); the consumer, which leaves the group (its revoke callback
        commits, and tells the crash guard); the crash guard (an orderly end: no partition
        died with a record in hand); the committer, before the stores it commits; the
        stores (local copies kept); the slot, whose directory holds them, last."""
        local = self.local
        order: list[Held | None] = [
            self.chain.attempt, self.consumer, local.guard, self.chain.committer,
            local.stores, local.slot,
        ]  # fmt: skip
        return [part for part in order if part is not None]
