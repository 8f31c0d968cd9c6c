"""Exactly-once: outputs, changelog records and input offsets commit in one transaction.

One transactional producer per instance (``transactional.id`` = ``<app>-<instance slot>``),
a transaction always open while running. Store changes go into it as they are made
(``send_ahead``, every poll). A commit (every commit interval, on revoke, at shutdown)
flushes the outputs, produces the store changes not sent yet into the transaction, adds the
input offsets (``send_offsets_to_transaction`` with the consumer's group metadata) and
commits; then the changes are applied to the local stores and the next transaction opens.

A transaction that must be aborted (an output or record that did not finish, a commit the
broker refuses as abortable, partitions lost) is aborted: store changes are dropped and
every partition is rewound to its committed offset (``Partitions.rewind_to_committed``),
so what was processed since is processed again. Outputs refused for their records' sake
end it too, through ``rewind`` (as ``recover``: a new producer): it is done again without
those records (``streams.pipeline.produce``). A producer fenced by a newer instance
with the same ``transactional.id`` raises ``ProducerFencedError``, another fatal error
``TransactionError``: from then on nothing is committed or aborted. Fenced at the end of a
transaction open longer than ``transaction.timeout.ms`` is not that: the broker aborted
the transaction itself and bumped the producer's epoch (a commit that waited out its
coordinator's move past the timeout, or a step that blocked that long, whose next write
is then fenced; KIP-588's case, which librdkafka reports as fencing), so it is an outage
like any other. A broker outage raises ``BrokerUnavailable`` instead of waiting in an
abort; ``recover`` then starts over with a fresh producer, whose initialisation aborts the
open transaction.

The transaction's lifecycle is a ``TxnPhase``, checked at each transition.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from enum import Enum
from typing import Any, Protocol, cast

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from streams.client_errors import FENCED, transient, unanswered
from streams.coordinates import TP
from streams.pipeline.commit import Committer
from streams.pipeline.errors import BrokerUnavailable, RuntimeFailure, unavailable
from streams.pipeline.produce import Producer
from streams.runtime.commit.bounded import call_within
from streams.runtime.commit.context import CommitContext
from streams.runtime.commit.positions import (
    apply_committed,
    finished_positions,
    mark_committed,
    moved_offsets,
    settle_changelog,
    settle_outputs,
)
from streams.runtime.commit.stores import ensure_changelogs, restore
from streams.runtime.commit.undo import undo
from streams.state import StateManager


class TransactionalProducer(Producer, Protocol):
    """A producer with a ``transactional.id`` (``confluent_kafka.Producer`` is one)."""

    def init_transactions(self, timeout: float, /) -> None: ...
    def begin_transaction(self) -> None: ...
    def send_offsets_to_transaction(
        self, offsets: list[TopicPartition], group_metadata: Any, timeout: float, /
    ) -> None: ...
    def commit_transaction(self, timeout: float, /) -> None: ...
    def abort_transaction(self, timeout: float, /) -> None: ...


OFFSETS_WAIT_S = 15.0
"""How long adding the offsets to a transaction may take (a coordinator moving takes a
broker's session timeout, 9 s by default) before it counts as an outage."""


class ProducerFencedError(RuntimeFailure):
    """Another instance with this instance's ``transactional.id`` took over."""


class TransactionError(RuntimeFailure):
    """A transaction could be neither committed nor aborted and rewound."""


class TxnPhase(Enum):
    IDLE = "idle"  # no transaction open: the next one may begin
    OPEN = "open"
    UNINITIALISED = "uninitialised"  # a new producer whose transactions are not initialised
    DEAD = "dead"  # fenced or fatal: nothing is committed or aborted any more
    STOPPED = "stopped"  # finished: the revoke that closing the consumer causes is a no-op


class TransactionCommitter(Committer):
    """Implements ``streams.pipeline.commit.Committer`` for exactly-once."""

    def __init__(
        self,
        ctx: CommitContext,
        state: StateManager | None,
        transactional_id: str,
        *,
        transaction_timeout_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ctx = ctx
        self._consumer = ctx.consumer
        self._topics = ctx.topics
        self._sink = ctx.sink
        self._make_producer = ctx.make_producer
        self._partitions = ctx.partitions
        self._state = state
        self.transactional_id = transactional_id
        self._timeout = ctx.timeout
        self._log = ctx.log
        self.phase = TxnPhase.IDLE
        self._interrupted: BrokerUnavailable | None = None  # an outage met in a callback
        self._transaction_timeout_s = transaction_timeout_s
        self._clock = clock
        self._opened_at = 0.0  # when the open transaction began (``clock``)
        self.commits = 0
        self.aborts = 0
        # A write fenced in a transaction the broker timed out (a step that blocked past
        # the timeout) is an outage too, not a refusal.
        self._sink.transient = self._outage

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Create or validate the changelogs, initialise the transactional producer (which
        fences a crashed predecessor and aborts its open transaction), open the first
        transaction. Blocks on the broker."""
        if self._state is not None:
            ensure_changelogs(self._topics, self._state)
        try:
            self._producer.init_transactions(self._timeout)
        except KafkaException as exc:
            raise self._fatal(exc, "initialising transactions") from exc
        self._begin()

    def finish(self, failure: BaseException | None) -> None:
        """A last commit; after ``failure`` an abort, so nothing of the failed interval is
        ever visible to read_committed readers."""
        if not self._alive:
            return
        try:
            if failure is None:
                self._commit(reopen=False)
            elif self.phase is TxnPhase.OPEN:
                self._abort_quietly()
        finally:
            self.phase = TxnPhase.STOPPED

    def close(self) -> None:
        if self.phase is TxnPhase.OPEN:
            self._abort_quietly()

    @property
    def _producer(self) -> TransactionalProducer:
        return cast(TransactionalProducer, self._sink.producer)

    @property
    def _alive(self) -> bool:
        return self.phase not in (TxnPhase.DEAD, TxnPhase.STOPPED)

    # -- rebalance --------------------------------------------------------------------------
    def assigned(self, partitions: Sequence[TP]) -> None:
        if self._state is not None:
            restore(self._partitions, self._state, partitions)
        else:
            self._partitions.load_committed(partitions)

    def revoked(self, partitions: Sequence[TP]) -> None:
        try:
            self.commit()  # the transaction holds every partition's work
        finally:  # committed or not (``OutputsRefused``: the next owner does it again)
            self._release(partitions)

    def lost(self, partitions: Sequence[TP]) -> None:
        """The open transaction holds their work: it is aborted, the partitions kept are
        rewound, and their stores close without flushing."""
        if self.phase is TxnPhase.OPEN:
            try:
                self._abort("partitions lost", exclude=partitions)
            except BrokerUnavailable as exc:  # raised at the next commit: recovery aborts
                self._interrupted = exc
        self._release(partitions)

    def _release(self, partitions: Iterable[TP]) -> None:
        if self._state is not None:
            for topic, partition in partitions:
                self._state.revoke(topic, partition, keep=True)

    # -- commits ----------------------------------------------------------------------------
    def commit(self) -> None:
        """Commit the open transaction and open the next (see the module docstring)."""
        if not self._alive:
            return
        if self._interrupted is not None:
            raise self._interrupted
        self._commit(reopen=True)

    def send_ahead(self) -> None:
        state = self._state
        if self._alive and self.phase is TxnPhase.OPEN and state is not None:
            if state.unsent():
                positions = finished_positions(self._partitions.values(), state)
                state.send(self._producer, positions)  # in the open transaction
            state.apply_some()  # the last commit's changes, a chunk at a time

    def _commit(self, *, reopen: bool) -> None:
        if self.phase is not TxnPhase.OPEN:
            return
        sink, state = self._sink, self._state
        partitions = self._partitions.values()
        settled = settle_outputs(sink, self._timeout, self._log)
        if sink.errors and not sink.refused:  # outputs timed out: the broker is away
            sink.raise_errors()  # BrokerUnavailable: recovery, not an abort that waits
        if sink.errors or not settled:
            self._abort("an output was not written")
            return
        if sink.refusals:  # the runtime does the work again without their records
            sink.raise_errors()
        positions = finished_positions(partitions, state)
        offsets = moved_offsets(partitions, positions)
        producer = self._producer
        try:
            written = state.flush(producer, positions) if state is not None else 0
            if written and state is not None:
                settle_changelog(sink, state, self._timeout)
            if not offsets and not written:
                if state is not None:
                    state.apply()  # nothing was written: only clears the flush
                if not reopen:
                    self._abort_quietly()  # an empty transaction costs nothing to abort
                return
            if offsets:
                self._send_offsets(producer, offsets)
            self._commit_with_retries()
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            if self._timed_out(err):
                raise unavailable(exc, "committing a transaction the broker timed out") from exc
            if err.code() in FENCED or (err.fatal() and not transient(err)):
                raise self._fatal(exc, "committing a transaction") from exc
            if err.fatal() or (transient(err) and not err.txn_requires_abort()):
                # The broker is away (an abort would only wait for it too): recovery
                # replaces the producer, which aborts or completes this transaction.
                raise unavailable(exc, "committing a transaction") from exc
            self._abort(f"commit failed: {err.str()}")
            return
        self.phase = TxnPhase.IDLE
        mark_committed(partitions, offsets)
        if state is not None:
            apply_committed(sink, state)
        self.commits += 1
        if reopen:
            self._begin()

    def _send_offsets(self, producer: TransactionalProducer, offsets: list[TopicPartition]) -> None:
        """Add the input offsets to the open transaction, waiting ``OFFSETS_WAIT_S`` at most.

        librdkafka (2.16) can block in ``send_offsets_to_transaction`` past its timeout for
        good when the group's coordinator has left the cluster (its node killed: the call
        waits for a coordinator it no longer connects to; librdkafka issues 5456 and 5511).
        So the call runs on a thread of its own; past the wait it is an outage: recovery
        replaces the producer, whose initialisation fences this one and aborts the
        transaction. The stuck call keeps the old producer until it returns (fenced)."""
        group = self._consumer.consumer_group_metadata()
        wait = min(self._timeout, OFFSETS_WAIT_S)
        call_within(
            wait + 1.0,
            lambda: producer.send_offsets_to_transaction(offsets, group, wait),
            "adding the input offsets to a transaction",
        )

    def _commit_with_retries(self, attempts: int = 3) -> None:
        """Commit, trying a retriable failure (a timeout) again while the cluster answers.
        When it does not, the failure is raised at once: each try waits out the whole
        timeout while the broker is away (the outage test met an instance silent in its second
        try a minute on), and recovery's new producer ends the transaction either way."""
        for attempt in range(attempts):
            try:
                self._producer.commit_transaction(self._timeout)
                return
            except KafkaException as exc:
                if not exc.args[0].retriable() or attempt == attempts - 1:
                    raise
                if unanswered(self._consumer) is not None:
                    raise

    # -- transactions -----------------------------------------------------------------------
    def _begin(self) -> None:
        if self.phase is not TxnPhase.IDLE:
            raise TransactionError(f"cannot begin a transaction while {self.phase.value}")
        try:
            self._producer.begin_transaction()
        except KafkaException as exc:
            if transient(exc.args[0]):
                raise unavailable(exc, "beginning a transaction") from exc
            raise self._fatal(exc, "beginning a transaction") from exc
        self.phase = TxnPhase.OPEN
        self._opened_at = self._clock()

    def _abort(self, reason: str, exclude: Iterable[TP] = ()) -> None:
        """Abort the open transaction, drop store changes, rewind, open the next one."""
        try:
            self._producer.abort_transaction(self._timeout)
        except KafkaException as exc:
            if exc.args[0].code() in FENCED and not self._timed_out(exc.args[0]):
                raise self._fatal(exc, "aborting a transaction") from exc
            # The transaction could not be ended here: its coordinator moving, or one that
            # timed it out while a node was frozen and took it from this producer
            # (INVALID_TXN_STATE). Recovery's new producer ends whatever is left, and
            # stops the instance if it cannot (authorization, say).
            raise unavailable(exc, "aborting a transaction") from exc
        self.phase = TxnPhase.IDLE
        self.aborts += 1
        rewound = undo(self._ctx, self._state, exclude, transactional=True)  # outputs gone
        self._log.warning(
            "transaction aborted, partitions rewound to their committed offsets",
            reason=reason,
            partitions=len(rewound),
        )
        self._begin()

    def _abort_quietly(self) -> None:
        try:
            self._producer.abort_transaction(self._timeout)
        except KafkaException as exc:
            failure = self._failure(exc, "aborting a transaction")
            if isinstance(failure, ProducerFencedError):
                self._log.error(str(failure))
            else:
                self._log.warning("transaction abort failed", error=exc.args[0].str())
        self.phase = TxnPhase.IDLE
        if self._state is not None:
            self._state.abort()

    def recover(self) -> None:
        """After a broker outage, once the broker answers: a new producer (always: outputs
        that timed out may or may not have been written, which leaves the old one's
        sequence numbers out of step with the broker), its transactions initialised (which
        fences the old epoch and aborts its transaction); store changes dropped; every
        partition rewound; the next transaction opened. Raises ``BrokerUnavailable`` when
        the broker is away again (call again), ``ProducerFencedError``/``TransactionError``
        when it cannot go on."""
        self._start_over()

    def _start_over(self, exclude: Sequence[TP] = ()) -> None:
        self._interrupted = None
        if self.phase is not TxnPhase.UNINITIALISED:
            self._sink.replace_producer(self._make_producer)
            self.phase = TxnPhase.UNINITIALISED
        try:
            self._producer.init_transactions(self._timeout)
        except KafkaException as exc:
            if transient(exc.args[0]):
                raise unavailable(exc, "initialising transactions") from exc
            raise self._fatal(exc, "initialising transactions") from exc
        self.phase = TxnPhase.IDLE
        self.aborts += 1
        undo(self._ctx, self._state, exclude, transactional=True)
        self._begin()

    def rewind(self, exclude: Sequence[TP] = ()) -> None:
        """Outputs refused for their records' sake: every write settled (every refusal
        known), then as ``recover``, but the partitions in ``exclude`` (leaving) are not
        rewound. A new producer, not an abort: librdkafka (2.16) fails the next transaction
        of a producer whose write was refused in an aborted one (OUT_OF_ORDER_SEQUENCE_NUMBER,
        seen on Kafka 4.4), so the work would be done a third time."""
        if self._alive:
            settle_outputs(self._sink, self._timeout, self._log)
            self._start_over(exclude)

    # -- failures ---------------------------------------------------------------------------
    def _outage(self, err: KafkaError) -> bool:
        """Whether a failed write is an outage: a transient error, or fencing by ``_timed_out``."""
        return transient(err) or self._timed_out(err)

    def _timed_out(self, err: KafkaError) -> bool:
        """Whether ``err`` fences a transaction the broker aborted for its age: no other
        instance took over, a new producer goes on (``recover``)."""
        age = self._clock() - self._opened_at
        return err.code() in FENCED and age >= self._transaction_timeout_s

    def _fatal(self, exc: KafkaException, doing: str) -> RuntimeFailure:
        """The error to stop with; from now on nothing is committed or aborted."""
        self.phase = TxnPhase.DEAD
        return self._failure(exc, doing)

    def _failure(self, exc: KafkaException, doing: str) -> RuntimeFailure:
        err: KafkaError = exc.args[0]
        if err.code() in FENCED:
            return ProducerFencedError(
                f"the transactional producer {self.transactional_id!r} was fenced while "
                f"{doing}: another instance with the same transactional.id took over (a "
                "restarted copy of this instance?); stopping without committing"
            )
        return TransactionError(f"transaction error while {doing}: {err.str()}")
