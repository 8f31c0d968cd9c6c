"""Commits of a stateful or exactly-once instance: each commit is a checkpoint.

The runtime hands its commits, assignments and revocations to a ``Checkpointer`` when the
topology declares stores or runs exactly-once (a stateless at-least-once runtime keeps its
plain asynchronous offset commits). Everything runs on the runtime's thread; every call may
block on the broker, as said.

**At-least-once with stores** (``commit``, every ``commit_interval_s``, on revoke and at
shutdown): flush the outputs (blocks until acknowledged), take each partition's finished
position (last processed + 1), produce the stores' changes tagged with it to their
changelogs, flush and check that every changelog record is acknowledged, commit the input
offsets synchronously, then apply the changes to the local stores. A partition with a
record not finished (it failed) is left out entirely: neither its state nor its offset
moves, so a restart reprocesses from a consistent point.

**Exactly-once**: one transactional producer per instance (``transactional.id`` =
``<app>-<instance slot>``), a transaction always open. ``commit`` flushes the outputs,
produces the changelog records into the transaction, adds the input offsets
(``send_offsets_to_transaction`` with the consumer's group metadata) and commits it, then
applies the store changes and opens the next transaction. A transaction that must be
aborted (a rebalance fenced its offsets, a lost partition, a timeout) is aborted: store
changes are dropped, every assigned partition is rewound to its committed offset, and
processing continues from there. A producer fenced by a newer instance with the same
``transactional.id`` raises ``ProducerFencedError``: this instance stops, committing nothing.
A broker outage raises ``BrokerUnavailable`` instead of waiting in an abort; the runtime
then calls ``recover`` once the broker answers (``streams.runtime.recovery``).

**Assignment** (``assigned``, inside the rebalance callback): the committed offset of each
new partition is read (none: the low or high watermark, following ``auto.offset.reset``),
then its stores are restored up to it; this blocks until the restore is done, before any
record of the partition is processed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from streams.runtime.config import RuntimeConfig
from streams.runtime.errors import MissingTopicError, RuntimeFailure
from streams.runtime.offsets import PartitionOffsets
from streams.runtime.recovery import FENCED, BrokerUnavailable, replace_producer, transient
from streams.runtime.recovery import unavailable as _unavailable
from streams.runtime.sink import OutputSink
from streams.state import StateError, StateManager

TP = tuple[str, int]
BeforeCommit = Callable[[Producer, dict[TP, int]], None]


class ProducerFencedError(RuntimeFailure):
    """Another instance with this instance's ``transactional.id`` took over."""


class TransactionError(RuntimeFailure):
    """A transaction could be neither committed nor aborted and rewound."""


class Checkpointer:
    """Commits, assignments and revocations of one stateful or exactly-once runtime.

    ``transactional_id``: exactly-once when given (the producer must be transactional with
    that id). ``partitions`` is the runtime's own map of assigned partitions; after an aborted
    transaction the rewound partitions get fresh ``PartitionOffsets`` in it.
    ``before_commit`` hooks run with the producer and the positions about to be committed,
    before the offsets move (other durable state, e.g. failure routing's waiting rooms).
    """

    def __init__(
        self,
        *,
        consumer: Consumer,
        sink: OutputSink,
        partitions: dict[TP, PartitionOffsets],
        state: StateManager | None,
        transactional_id: str | None,
        config: RuntimeConfig,
        log: Any,
    ) -> None:
        self.consumer = consumer
        self.sink = sink
        self.producer = sink.producer
        self.partitions = partitions
        self.state = state
        self.transactional_id = transactional_id
        self.exactly_once = transactional_id is not None
        self.config = config
        self.before_commit: list[BeforeCommit] = []
        self.commits = 0
        self.aborts = 0
        self._log = log
        self._in_transaction = False
        self._broken = False  # a state checkpoint failed: nothing stateful may commit now
        self._dead: RuntimeFailure | None = None  # a fatal producer error: commit nothing
        self._timeout = config.shutdown_timeout_s
        self._interrupted: BrokerUnavailable | None = None  # an outage met in a callback
        self._needs_init = False  # a replaced transactional producer not initialised yet

    # -- start ------------------------------------------------------------------------------
    def prepare(self, admin: AdminClient) -> None:
        """Before subscribing: create or validate every changelog (``ChangelogTopicError``
        when one cannot back its store: nothing is processed), and with exactly-once
        initialise the transactional producer (fencing a crashed predecessor, aborting its
        open transaction) and open the first transaction. Blocks on the broker."""
        if self.state is not None:
            topics = {store.source_topic or "" for store in self.state.stores.values()}
            self.state.ensure_changelogs(admin, {t: _partition_count(admin, t) for t in topics})
        if self.exactly_once:
            try:
                self.producer.init_transactions(self._timeout)
            except KafkaException as exc:
                raise self._fatal(exc, "initialising transactions") from exc
            self._begin()

    # -- rebalance --------------------------------------------------------------------------
    def assigned(self, partitions: Sequence[TopicPartition]) -> None:
        """Restore the stores of newly assigned partitions up to their committed offsets
        (blocks for the restores)."""
        if self.state is None:
            return
        fed = {store.source_topic for store in self.state.stores.values()}
        keys = [(tp.topic, tp.partition) for tp in partitions if tp.topic in fed]
        for (topic, partition), offset in self._committed(keys).items():
            self.state.assign(topic, partition, offset)
            po = self.partitions.get((topic, partition))
            if po is not None:
                po.committed = offset

    def release(self, revoked: Sequence[PartitionOffsets]) -> None:
        """After the revoked partitions' checkpoint (``commit``): close their stores,
        keeping the local copies for a fast return."""
        if self.state is not None:
            for po in revoked:
                self.state.revoke(po.topic, po.partition, keep=True)

    def lost(self, lost: Sequence[TopicPartition]) -> None:
        """The partitions are already someone else's: nothing of them may commit.

        Exactly-once: the open transaction holds their work, so it is aborted and the
        partitions kept are rewound. Their stores close without flushing."""
        gone = {(tp.topic, tp.partition) for tp in lost}
        if self.exactly_once and self._in_transaction and self._dead is None:
            try:
                self._abort("partitions lost", exclude=gone)
            except BrokerUnavailable as exc:  # raised at the next commit: recovery aborts
                self._interrupted = exc
        if self.state is not None:
            for topic, partition in gone:
                self.state.revoke(topic, partition, keep=True)

    # -- commits ----------------------------------------------------------------------------
    def commit(self, partitions: Sequence[PartitionOffsets]) -> None:
        """One checkpoint (see the module docstring). Blocks until it is durable; raises
        ``ChangelogWriteError`` (nothing committed), ``ProducerFencedError`` or
        ``TransactionError``."""
        if self._dead is not None:  # raised once already; the revoke on close lands here
            return
        if self._interrupted is not None:
            raise self._interrupted
        if self.exactly_once:
            self._commit_transaction()
        else:
            self._checkpoint(partitions)

    def finish(self, failure: BaseException | None) -> None:
        """At shutdown: a last checkpoint, or with ``failure`` (exactly-once) an abort, so
        no output of the failed interval is ever visible to read_committed readers."""
        if self._dead is not None:
            return
        try:
            if self.exactly_once:
                if failure is None:
                    self._commit_transaction(reopen=False)
                elif self._in_transaction:
                    self._abort_quietly()
            else:
                self._checkpoint(list(self.partitions.values()))
        finally:
            # The revoke that closing the consumer triggers has nothing left to commit.
            self._dead = self._dead or RuntimeFailure("the instance has stopped")

    def close(self) -> None:
        """After the consumer closed: close every store (local copies kept)."""
        if self.exactly_once and self._in_transaction and self._dead is None:
            self._abort_quietly()
        if self.state is not None:
            self.state.close(keep=True)

    def _finished(self, partitions: Iterable[PartitionOffsets]) -> dict[TP, int]:
        """Flush the outputs; the position of every partition whose records are all done."""
        self.sink.poll()
        left = self.sink.flush(self._timeout)
        if left:
            self._log.error("outputs not acknowledged in time", outstanding=left)
        positions: dict[TP, int] = {}
        for po in partitions:
            nxt = po.committable()
            if nxt is None or po.in_flight:  # nothing yet, or a record that did not finish
                continue
            positions[(po.topic, po.partition)] = nxt
        return positions

    def _checkpoint(self, partitions: Sequence[PartitionOffsets]) -> None:
        positions = self._finished(partitions)
        if not positions or self._broken:
            return
        for hook in self.before_commit:
            hook(self.producer, positions)
        state = self.state
        if state is not None:
            try:
                if state.flush(self.producer, positions):
                    self.sink.flush(self._timeout)
                state.check_delivered()
            except StateError:
                self._broken = True
                state.abort()
                raise
        by_key = {(po.topic, po.partition): po for po in partitions}
        moved = [(by_key[k], o) for k, o in positions.items() if by_key[k].committed != o]
        if moved:
            offsets = [TopicPartition(po.topic, po.partition, o) for po, o in moved]
            try:
                self.consumer.commit(offsets=offsets, asynchronous=False)
            except KafkaException as exc:
                # The records are not read again in this run, so their changes still apply
                # (a crash now rebuilds the store from the changelog: never ahead of input).
                self._log.warning("commit failed", error=exc.args[0].str())
            else:
                for po, o in moved:
                    po.committed = o
        if state is not None:
            state.apply()
        self.commits += 1

    def _commit_transaction(self, *, reopen: bool = True) -> None:
        if not self._in_transaction:
            return
        partitions = list(self.partitions.values())
        positions = self._finished(partitions)
        if self.sink.errors and not self.sink.refused:  # outputs timed out: the broker is away
            self.sink.raise_errors()  # BrokerUnavailable: recovery, not an abort that waits
        if self.sink.errors or any(po.in_flight for po in partitions):
            self._abort("an output or record did not finish")
            return
        by_key = {(po.topic, po.partition): po for po in partitions}
        moved = {k: o for k, o in positions.items() if by_key[k].committed != o}
        try:
            for hook in self.before_commit:
                hook(self.producer, positions)
            written = self.state.flush(self.producer, positions) if self.state else 0
            if written and self.state is not None:
                self.sink.flush(self._timeout)  # serves the changelog's delivery reports
                self.state.check_delivered()
            if not moved and not written:
                if self.state is not None:
                    self.state.apply()  # nothing was written: only clears the flush
                if not reopen:
                    self._end_empty()
                return
            if moved:
                offsets = [TopicPartition(t, p, o) for (t, p), o in moved.items()]
                self.producer.send_offsets_to_transaction(
                    offsets, self.consumer.consumer_group_metadata(), self._timeout
                )
            self._commit_with_retries()
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            if err.code() in FENCED or (err.fatal() and not transient(err)):
                raise self._fatal(exc, "committing a transaction") from exc
            if err.fatal() or (transient(err) and not err.txn_requires_abort()):
                # The broker is away (an abort would only wait for it too): recovery
                # replaces the producer, which aborts or completes this transaction.
                raise _unavailable(exc, "committing a transaction") from exc
            self._abort(f"commit failed: {err.str()}")
            return
        self._in_transaction = False
        for key, o in moved.items():
            by_key[key].committed = o
        if self.state is not None:
            self.state.apply()
        self.commits += 1
        if reopen:
            self._begin()

    def _commit_with_retries(self, attempts: int = 3) -> None:
        for attempt in range(attempts):
            try:
                self.producer.commit_transaction(self._timeout)
                return
            except KafkaException as exc:
                err: KafkaError = exc.args[0]
                if not err.retriable() or attempt == attempts - 1:
                    raise

    def _end_empty(self) -> None:
        self._abort_quietly()  # nothing in it: aborting an empty transaction costs nothing

    # -- transactions -----------------------------------------------------------------------
    def _begin(self) -> None:
        try:
            self.producer.begin_transaction()
        except KafkaException as exc:
            if transient(exc.args[0]):
                raise _unavailable(exc, "beginning a transaction") from exc
            raise self._fatal(exc, "beginning a transaction") from exc
        self._in_transaction = True

    def _abort(self, reason: str, exclude: set[TP] | frozenset[TP] = frozenset()) -> None:
        """Abort the open transaction, drop store changes, rewind, open the next one."""
        try:
            self.producer.abort_transaction(self._timeout)
        except KafkaException as exc:
            if transient(exc.args[0]):  # the transaction stays open: recovery aborts it
                raise _unavailable(exc, "aborting a transaction") from exc
            raise self._fatal(exc, "aborting a transaction") from exc
        self._in_transaction = False
        self.aborts += 1
        self.sink.errors.clear()  # the aborted outputs are gone: they are produced again
        if self.state is not None:
            self.state.abort()
        rewound = self._rewind(exclude)
        self._log.warning(
            "transaction aborted, partitions rewound to their committed offsets",
            reason=reason,
            partitions=len(rewound),
        )
        self._begin()

    def recover(self, make_producer: Callable[[], Producer]) -> None:
        """After a broker outage (``streams.runtime.recovery``), once the broker answers:
        undo everything since the last commit. Exactly-once: the producer is replaced by
        ``make_producer()`` and its transactions initialised (which aborts the open one),
        then the next transaction opens; at-least-once: queued outputs are settled and a
        producer in a fatal state is replaced. Both guarantees: undelivered outputs and
        store changes are dropped and every partition is rewound to its committed offset.
        Blocks on the broker; raises ``BrokerUnavailable`` when it is away again (call
        again), ``ProducerFencedError``/``TransactionError`` when it cannot go on."""
        self._interrupted = None
        if not self.exactly_once:  # no write still queued may fail after the rewind
            self.sink.flush(self._timeout)
        # Exactly-once: always a new producer. Outputs that timed out may or may not have
        # been written, which leaves the old one's sequence numbers out of step with the
        # broker; initialising a new one fences the old epoch and aborts its transaction.
        if self.exactly_once or self._needs_init or self.sink.fatal:
            self._renew(make_producer)
        if self.exactly_once:
            self._in_transaction = False
            self.aborts += 1
        self.sink.errors.clear()  # the undone outputs are produced again
        self.sink.refused = 0
        if self.state is not None:
            self.state.abort()
        self._rewind(frozenset())
        if self.exactly_once:
            self._begin()

    def _renew(self, make_producer: Callable[[], Producer]) -> None:
        """Replace a producer in a fatal state (exactly-once: and initialise it)."""
        if not self._needs_init:
            self.producer = replace_producer(self.producer, make_producer)
            self.sink.producer = self.producer
            self.sink.fatal = False
            self._needs_init = self.exactly_once
        if self._needs_init:
            try:
                self.producer.init_transactions(self._timeout)
            except KafkaException as exc:
                if transient(exc.args[0]):
                    raise _unavailable(exc, "initialising transactions") from exc
                raise self._fatal(exc, "initialising transactions") from exc
            self._needs_init = False
        self._in_transaction = False

    def _abort_quietly(self) -> None:
        try:
            self.producer.abort_transaction(self._timeout)
        except KafkaException as exc:
            failure = self._failure(exc, "aborting a transaction")
            if isinstance(failure, ProducerFencedError):
                self._log.error(str(failure))
            else:
                self._log.warning("transaction abort failed", error=exc.args[0].str())
        self._in_transaction = False
        if self.state is not None:
            self.state.abort()

    def _rewind(self, exclude: set[TP] | frozenset[TP]) -> list[TP]:
        keys = [k for k in self.partitions if k not in exclude]
        for (topic, partition), offset in self._committed(keys).items():
            try:
                self.consumer.seek(TopicPartition(topic, partition, offset))
            except KafkaException as exc:
                raise TransactionError(
                    f"cannot rewind {topic}[{partition}] to offset {offset} after an aborted "
                    f"transaction ({exc.args[0].str()}); stopping so the records are read "
                    "again on restart"
                ) from exc
            fresh = PartitionOffsets(topic, partition)
            fresh.committed = offset
            self.partitions[(topic, partition)] = fresh
        return keys

    def _fatal(self, exc: KafkaException, doing: str) -> RuntimeFailure:
        """The error to stop with; from now on nothing is committed or aborted."""
        self._dead = self._failure(exc, doing)
        self._in_transaction = False
        return self._dead

    def _failure(self, exc: KafkaException, doing: str) -> RuntimeFailure:
        err: KafkaError = exc.args[0]
        tid = self.transactional_id
        fenced = {
            KafkaError._FENCED,
            getattr(KafkaError, "PRODUCER_FENCED", -1),
            KafkaError.INVALID_PRODUCER_EPOCH,
        }
        if err.code() in fenced:
            return ProducerFencedError(
                f"the transactional producer {tid!r} was fenced while {doing}: another "
                "instance with the same transactional.id took over (a restarted copy of this "
                "instance?); stopping without committing"
            )
        return TransactionError(f"transaction error while {doing}: {err.str()}")

    # -- offsets ----------------------------------------------------------------------------
    def _committed(self, keys: Sequence[TP]) -> dict[TP, int]:
        """The committed offset of each partition; none: where ``auto.offset.reset`` says."""
        if not keys:
            return {}
        tps = [TopicPartition(t, p) for t, p in keys]
        try:
            found = self.consumer.committed(tps, timeout=self._timeout)
        except KafkaException as exc:
            if transient(exc.args[0]):
                raise _unavailable(exc, "reading the committed offsets") from exc
            raise RuntimeFailure(f"cannot read the committed offsets: {exc.args[0].str()}") from exc
        out: dict[TP, int] = {}
        latest = self.config.auto_offset_reset in ("latest", "end", "largest")
        for tp in found:
            offset = tp.offset
            if offset < 0:
                low, high = self.consumer.get_watermark_offsets(
                    TopicPartition(tp.topic, tp.partition), timeout=self._timeout
                )
                offset = high if latest else low
            out[(tp.topic, tp.partition)] = int(offset)
        return out


def _partition_count(admin: AdminClient, topic: str) -> int:
    meta = admin.list_topics(topic=topic, timeout=30).topics.get(topic)
    if meta is None or meta.error is not None:
        raise MissingTopicError(
            f"topic {topic!r}, which a state store is partitioned like, does not exist"
        )
    return len(meta.partitions)
