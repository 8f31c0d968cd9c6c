"""The failure-routing facade a runtime calls: routing, per-key order, retry bookkeeping.

One ``FailureHandler`` per runtime instance (one app, one policy; a step's own policy is
passed per failure). The record path's failure policy (``streams.pipeline.failure``)
calls it at four points, all on the processing thread, none blocking or doing I/O (the
returned routes are written through the runtime's producer):

1. ``on_record(record)`` for every consumed record (input topic or retry tier), before
   decoding: ``PROCESS`` it (``admission.record``), ``PARK`` it (a record of its key is
   waiting in a retry tier: the record is now in the waiting room; count its offset as
   done once the room's store is flushed), or ``SKIP`` it (a stale copy, already settled:
   redelivered after a crash; count it as done).
2. ``on_success(record)`` when the record was processed and its outputs are sent: returns
   the next parked record of its key to process now (or None). Process it the same way and
   call ``on_success``/``on_failure`` for it in turn.
3. ``on_failure(record, exc, stage=..., step=...)`` when decoding or a step raised: returns
   the ``Route`` to produce (its acknowledgement is what lets the record's offset commit)
   and, when the record settled by being dead-lettered, the next parked record to process.
   Outputs the failed attempt already produced must be discarded by the runtime (buffered
   per record until success), so a success on a retry produces exactly the outputs a
   first-time success would.
4. ``revoked(partitions)`` on rebalance: drops the rooms of those input partitions (their
   state moves with the store partition).

Durability, in this order: every write (outputs, retry and DLQ records) acknowledged,
then the waiting-room store flushed to its changelog, then the input offsets committed.
State may then be ahead of the committed offsets after a crash, never ahead of the
writes; ``on_record`` sorts out the records read again (property-tested over crashes).

Records read from a retry tier carry their source in their error headers, parsed once
when read (``record.failure``): nothing here parses them again.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import datetime
from enum import Enum
from typing import NamedTuple

from streams.coordinates import Coordinates
from streams.failures.headers import FailureInfo, Headers, Stage
from streams.failures.metrics import FailureMetrics
from streams.failures.parked import ParkedRecord
from streams.failures.policy import RetryPolicy
from streams.failures.routing import FailureRouter, RecordLike, Route
from streams.failures.topics import FailureTopics
from streams.failures.waiting import WaitingRoom, WaitingStore
from streams.record_size import DEFAULT_MESSAGE_MAX_BYTES


class Decision(Enum):
    PROCESS = "process"
    PARK = "park"
    SKIP = "skip"


class Admission(NamedTuple):
    """``on_record``'s answer; with ``PROCESS``, ``record`` is what to process now (the
    record itself, or after a crash its key's head, released but never finished)."""

    decision: Decision
    record: RecordLike | None = None


Room = WaitingRoom[bytes, ParkedRecord]
StoreFactory = Callable[[str, int], WaitingStore[bytes, ParkedRecord]]
"""``(input topic, partition)`` → where that partition's waiting room keeps its entries."""


def _attempts(info: FailureInfo | None) -> int:
    return info.attempts if info is not None else 0


def _parked(
    record: RecordLike, coordinates: Coordinates, headers: Headers, failure: FailureInfo | None
) -> ParkedRecord:
    return ParkedRecord(
        record.key, record.value, tuple(headers), coordinates, record.timestamp, failure
    )


class FailureHandler:
    """Routing decisions plus per-key order for one app. Not thread-safe."""

    def __init__(
        self,
        app_id: str,
        policy: RetryPolicy,
        *,
        store_for: StoreFactory | None = None,
        metrics: FailureMetrics | None = None,
        retried: Collection[str] | None = None,
        max_bytes: int = DEFAULT_MESSAGE_MAX_BYTES,
    ) -> None:
        self.app_id = app_id
        self.policy = policy
        self._max_bytes = max_bytes  # the producer's limit (``FailureRouter``)
        self.router = FailureRouter(app_id, policy, max_bytes=max_bytes)
        self.metrics = metrics or FailureMetrics()
        self._store_for = store_for
        self._rooms: dict[tuple[str, int], Room] = {}
        # The inputs with retry tiers (None: all). A record of another input is never
        # parked, and a failure there goes to the DLQ: it has no tier to wait in.
        self._retried = None if retried is None else frozenset(retried)
        self._dead_letters = FailureRouter(app_id, RetryPolicy.no_retries(), max_bytes=max_bytes)

    def _ordered(self, topic: str) -> bool:
        """Whether records of input ``topic`` keep their key's order through retries."""
        return self.policy.ordered and self._has_tiers(topic)

    def _has_tiers(self, topic: str) -> bool:
        return self._retried is None or topic in self._retried

    # -- topics ----------------------------------------------------------------------------
    def failure_topics(self, input_topic: str) -> FailureTopics:
        policy = self.policy if self._has_tiers(input_topic) else RetryPolicy.no_retries()
        return FailureTopics.for_input(self.app_id, input_topic, policy)

    def topics_to_read(self, inputs: Iterable[str]) -> list[str]:
        """The inputs and their retry tiers: what the runtime subscribes to."""
        out: list[str] = []
        for topic in inputs:
            out.append(topic)
            out.extend(self.failure_topics(topic).retries)
        return out

    # -- per record ------------------------------------------------------------------------
    def room(self, topic: str, partition: int) -> Room:
        """The waiting room of one input partition (created on first use)."""
        room = self._rooms.get((topic, partition))
        if room is None:
            store = self._store_for(topic, partition) if self._store_for else None
            room = self._rooms[(topic, partition)] = WaitingRoom(store)
        return room

    def _is_head(self, room: Room, record: RecordLike, info: FailureInfo | None) -> bool:
        """Is ``record`` the one its key waits for (same coordinates, same attempt)?"""
        if record.key is None:
            return False
        head = room.head(record.key)
        if head is None:
            return False
        origin = info.origin if info is not None else record.coordinates
        return head.coordinates == origin and _attempts(head.failure) == _attempts(info)

    def on_record(self, record: RecordLike) -> Admission:
        """Process, park or skip a consumed record (see the module docstring).

        After a crash, state and offsets may disagree; the answers keep the records of a
        key moving, in order, at least once: an input record that heads its key (its
        retry copy may be lost) is processed again; one already parked is skipped; one
        its key moved past (settled before the head failed) is processed again outside
        the waiting room, dead-lettered at once if it fails; a retry copy that no longer
        heads its key is skipped, unless its key's head was released and in hand when
        the process died: that head is processed again.
        """
        key = record.key
        info = record.failure
        origin = info.origin if info is not None else record.coordinates
        if key is None or not self._ordered(origin.topic):
            return Admission(Decision.PROCESS, record)
        if info is None:
            coordinates = record.coordinates
            room = self._rooms.get((coordinates.topic, coordinates.partition))
            if room is None and self._store_for is not None:
                room = self.room(coordinates.topic, coordinates.partition)  # its store may know
            if room is None or not room.is_blocked(key):  # the common case: nothing waits
                return Admission(Decision.PROCESS, record)
        room = self.room(origin.topic, origin.partition)
        head = room.head(key)
        if info is None:
            if head is None:
                return Admission(Decision.PROCESS, record)
            if head.coordinates == record.coordinates:
                room.failed(key, _parked(record, record.coordinates, record.headers, None))
                return Admission(Decision.PROCESS, record)
            if head.coordinates.offset > record.coordinates.offset:
                # Settled before its key's head failed (the state is ahead of the committed
                # offsets): process it again, outside the waiting room, in case its writes
                # were lost; it cannot wait behind a record that came after it.
                return Admission(Decision.PROCESS, record)
            if any(p.coordinates == record.coordinates for p in room.parked(key)):
                return Admission(Decision.SKIP)
            room.admit(key, _parked(record, record.coordinates, record.headers, None))
            return Admission(Decision.PARK)
        if head is None:
            return Admission(Decision.SKIP)
        if self._is_head(room, record, info):
            return Admission(Decision.PROCESS, record)
        if head.failure is None:
            return Admission(Decision.PROCESS, head)
        return Admission(Decision.SKIP)

    def on_success(self, record: RecordLike) -> ParkedRecord | None:
        """``record`` was processed: the next parked record of its key, if any."""
        info = record.failure
        if info is not None:
            self.metrics.succeeded_after_failure()
        return self._settle(record, info)

    def on_failure(
        self,
        record: RecordLike,
        exc: BaseException,
        *,
        stage: Stage = Stage.PROCESS,
        step: str | None = None,
        policy: RetryPolicy | None = None,
        now: datetime | None = None,
    ) -> tuple[Route, ParkedRecord | None]:
        """Route ``record``; returns the route and the next record released, if any.

        ``policy`` is a step's own policy (default: the handler's). The route is counted
        (and a dead letter logged) here, when decided: the runtime stops on a refused write.
        """
        info = record.failure
        router = (
            self.router
            if policy is None
            else FailureRouter(self.app_id, policy, max_bytes=self._max_bytes)
        )
        detached = self._detached(record, info)
        origin = info.origin if info is not None else record.coordinates
        if detached or not self._has_tiers(origin.topic):
            # settled once already (no retries that would reorder its key), or no tier
            router = self._dead_letters
        route = router.route(record, exc, stage=stage, step=step, now=now)
        self.metrics.routed(route)
        if route.dead_letter:
            return route, self._settle(record, info)
        if self._ordered(origin.topic) and record.key is not None and not detached:
            self.room(origin.topic, origin.partition).failed(
                record.key, _parked(record, origin, route.headers, route.info)
            )
        return route, None

    def _detached(self, record: RecordLike, info: FailureInfo | None) -> bool:
        """An input record read again after its key moved past it (see ``on_record``)."""
        coordinates = record.coordinates
        if info is not None or record.key is None or not self._ordered(coordinates.topic):
            return False
        room = self._rooms.get((coordinates.topic, coordinates.partition))
        head = room.head(record.key) if room is not None else None
        return head is not None and head.coordinates.offset > coordinates.offset

    def _settle(self, record: RecordLike, info: FailureInfo | None) -> ParkedRecord | None:
        origin = info.origin if info is not None else record.coordinates
        if record.key is None or not self._ordered(origin.topic):
            return None
        room = self._rooms.get((origin.topic, origin.partition))
        if room is None and self._store_for is not None:
            room = self.room(origin.topic, origin.partition)  # its store may know the key
        if room is None or not self._is_head(room, record, info):
            return None  # its key was free: nothing waits behind it
        return room.settled(record.key)

    # -- rebalance -------------------------------------------------------------------------
    def revoked(self, partitions: Sequence[tuple[str, int]]) -> None:
        """Forget the rooms of revoked partitions (their stores keep what they hold)."""
        for tp in partitions:
            self._rooms.pop(tp, None)
