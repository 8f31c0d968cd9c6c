"""``ShareRuntime``: one worker of a topology on a share group (KIP-932, a work queue).

``streams run --share`` (or ``TopologyBuilder(..., consumption="share")``) runs this instead
of ``Runtime``. Workers of one app id share its records: any worker takes any record, one
at a time, with no partition of its own, so adding a worker adds throughput whatever the
partition count; nothing keeps per-key order (``Topology.shared`` refuses stateful steps).

The loop is the runtime's: take what the share consumer delivered (up to ``poll_timeout_s``
waiting), submit each record to the chain, poll the chain (``streams.pipeline.share``: the
attempt, redelivery or the DLQ, the outputs, the acknowledgements once the outputs are
durable). At-least-once. A turn whose outputs the broker did not take releases its records
(delivered again) and goes on after an outage, or after outputs refused for their
records' sake (the refused records go to the DLQ when delivered to this worker again;
``streams.pipeline.produce``); any other write the broker refuses stops the run with
``DeliveryError``.

A new share group reads from the earliest offset (``auto_offset_reset``, set as the group's
``share.auto.offset.reset`` on start: a share group's start is a group setting). Timers
(``ctx.schedule``) are per partition: a share worker owns none, so they are refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from confluent_kafka import AcknowledgeType, KafkaError

from streams.cluster import set_share_offset_reset
from streams.codec import AvroCodec, Codec
from streams.envelope import CURRENT_CAUSE, CURRENT_SOURCE
from streams.failures.topics import ensure_failure_topics
from streams.logs import get_logger
from streams.pipeline.errors import BrokerUnavailable, OutputsRefused, RuntimeFailure
from streams.pipeline.execute import Attempt
from streams.pipeline.failure import OnSkip
from streams.pipeline.produce import OutputSink
from streams.pipeline.record import Record
from streams.pipeline.share import share_chain
from streams.pipeline.stats import Stats
from streams.record_size import message_max_bytes
from streams.runtime.clients import KafkaClients
from streams.runtime.config import RuntimeConfig
from streams.runtime.query import UnknownTableError
from streams.runtime.topics import prepare_topics
from streams.schemas import default_catalog
from streams.topology import Topology
from streams.topology.execution.plan import Plan
from streams.topology.failure_topics import failure_topics


class ShareClients(Protocol):
    """Where a share worker's clients come from (``KafkaClients``; the driver's in memory)."""

    def producer(self, config: dict[str, Any]) -> Any: ...
    def share_consumer(self, config: dict[str, Any]) -> Any: ...
    def admin(self) -> Any: ...


class ShareRuntime:
    """A worker of ``topology`` on its share group (see the module docstring); an
    ``Instance`` like the consumer group's ``Runtime``."""

    def __init__(
        self,
        topology: Topology,
        config: RuntimeConfig,
        *,
        codec: Codec | None = None,
        clients: ShareClients | None = None,
        clock: Callable[[], float] = time.time,
        on_tick: Callable[[Stats], None] | None = None,
        on_skip: OnSkip | None = None,
    ) -> None:
        self.topology = topology
        self.config = config
        self.stats = Stats()
        self._on_tick = on_tick
        self._last_tick = time.monotonic()
        self._stopping = False
        self._log = log = get_logger("streams.runtime", app=topology.app_id, consumption="share")
        self._attempt = Attempt(topology, codec or AvroCodec(default_catalog()), None, clock)
        if self._attempt.plan.timers:
            raise RuntimeFailure(
                "timers (ctx.schedule) run per partition: a share group's worker owns none"
            )
        clients = clients or KafkaClients(config.bootstrap, config.client)
        self._admin = clients.admin()
        self._topics = config.topics(self._admin)
        settings = config.producer_config()
        self._sink = sink = OutputSink(
            clients.producer(settings), max_bytes=message_max_bytes(settings)
        )
        self._consumer = consumer = clients.share_consumer(
            config.share_consumer_config(topology.app_id)
        )
        self._head = share_chain(
            topology,
            self._attempt,
            consumer,
            sink=sink,
            stats=self.stats,
            log=log,
            clock=clock,
            accept=AcknowledgeType.ACCEPT,
            release=AcknowledgeType.RELEASE,
            on_skip=on_skip,
        )

    @property
    def duplicates(self) -> int:
        """Records dropped by dedup steps: none (a share group's topology has none: dedup
        keeps state by key), counted as the consumer group's runtime counts them."""
        return self._attempt.duplicates

    @property
    def state(self) -> None:
        """No stores: a share group's topology keeps no state."""

    @property
    def plan(self) -> Plan:
        """The compiled topology the chain runs."""
        return self._attempt.plan

    def query(
        self,
        table: str,
        key: str,
        *,
        start_from: datetime | None = None,
        start_to: datetime | None = None,
    ) -> Any:
        """Tables are kept by key, which a share group's worker has none of."""
        raise UnknownTableError(f"{self.topology.app_id} runs on a share group: no table {table!r}")

    def stop(self) -> None:
        """Ask ``run`` to finish: safe from signal handlers and other threads."""
        self._stopping = True

    def start(self) -> None:
        """Check the inputs, create the owned topics and the DLQs (``prepare_topics``: the
        first thing created, once every option was checked and the ports bound), start the
        group at the earliest offset when new, subscribe."""
        prepare_topics(self._topics, self.topology)
        for topics in failure_topics(self.topology):
            ensure_failure_topics(self._topics, topics)
        set_share_offset_reset(
            self._admin,
            self.topology.app_id,
            self.config.auto_offset_reset,
            self.config.shutdown_timeout_s,
        )
        self._consumer.subscribe(self.topology.topics_read)
        self._log.info("started", topics=self.topology.topics_read)

    @property
    def in_flight(self) -> int:
        """Records started and not finished between turns: none, ever. The share chain
        has no concurrency step: each record is finished (an async step awaited in place)
        within the turn that took it (``streams.runtime.instance.Instance``)."""
        return 0

    def turn(self, wait: float | None = None) -> int:
        """One turn: what the consumer delivered (waiting up to ``wait``, default
        ``poll_timeout_s``), each through the chain, then the chain's poll."""
        # As the consumer group's runtime: events made carry the app id and derived ids.
        made_by = CURRENT_SOURCE.set(self.topology.app_id)
        caused_by = CURRENT_CAUSE.set(self._attempt.plan.current)
        try:
            return self._turn(wait)
        finally:
            CURRENT_CAUSE.reset(caused_by)
            CURRENT_SOURCE.reset(made_by)

    def _turn(self, wait: float | None) -> int:
        batch = self._consumer.poll(self.config.poll_timeout_s if wait is None else wait) or []
        head = self._head
        for msg in batch:
            err = msg.error()
            if err is None:
                head.submit(Record.shared(msg))
            elif err.fatal() or not err.retriable():
                raise RuntimeFailure(f"share consumer error: {err.str()}")
            elif err.code() != KafkaError._PARTITION_EOF:
                self._log.warning("share consumer error", error=err.str())
        head.poll()
        self._tick()
        return len(batch)

    def run(self) -> None:
        """Take, process and acknowledge records until stopped."""
        self.start()
        failure: BaseException | None = None
        try:
            while not self._stopping:
                try:
                    self.turn()
                except BrokerUnavailable as exc:  # the turn's records were released
                    self._log.warning("outputs not delivered; records released", error=str(exc))
                    self._sink.reset()
                except OutputsRefused as exc:  # released: done again without the refused
                    self._log.warning(
                        "outputs refused for their records' sake; records released",
                        error=str(exc),
                    )
                    self._sink.reset()
        except BaseException as exc:
            failure = exc
            raise
        finally:
            self.close(failure)

    def _tick(self) -> None:
        now = time.monotonic()
        if self._on_tick is not None and now - self._last_tick >= self.config.status_interval_s:
            self._last_tick = now
            self._on_tick(self.stats)

    def close(self, failure: BaseException | None = None) -> None:
        """Acknowledge what is done, leave the group, close."""
        try:
            if failure is None:
                self._head.join(self.config.shutdown_timeout_s)
        finally:
            self._attempt.close()
            self._consumer.close()  # commits what was acknowledged, leaves the group
            self._sink.flush(self.config.shutdown_timeout_s)
            if failure is None:
                self._log.info(
                    "stopped", consumed=self.stats.consumed, produced=self.stats.produced
                )
