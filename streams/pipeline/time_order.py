"""The ``TimeOrder`` step: a stream and the table it joins, read in event-time order.

A stream-table join (``stream.join(table, fn)`` of a table read from a topic) should
see each key's value as of the record's time: a table update that happened before an
order is in the table when the order is joined, one that happened after is not. The two
topics are fetched side by side, though, and either may be ahead: at a first start or a
replay, a whole topic of profiles may arrive before the orders of last year.

So, as Kafka Streams does with the partitions of one task, the records of such a join's
co-partitioned topics are handed on smallest event time first (per partition number,
each partition's own order kept). A record waits while a partition of the other side has
nothing in hand but records not read yet (its lag): one of them may be earlier. Waiting
records stay here, per partition, until that partition has read up to their time, has
nothing more to read, or has a record in hand (the earlier of the two goes first); a
partition with ``max_waiting`` records waiting is paused until half of them went on (a
memory bound). Nothing waiting is tracked yet, so no offset commits past it.

``submit`` takes the records of those topics (others pass straight on); ``poll`` hands on
what may go, then serves the rest of the chain. A record read again at or before one in
hand (the consumer went back) replaces what was in hand from there; a partition rewound
to its commit (a recovery, an aborted transaction) drops what it had in hand and is
resumed: the consumer reads it all again. Event times come from the envelope, decoded
once here for ``Decode`` to reuse; a record that does not decode (or a tombstone) never
waits: the attempt fails it or deletes its key at once.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Collection, Sequence

from confluent_kafka import TopicPartition

from streams.codec import DecodeError
from streams.coordinates import TP
from streams.envelope import Tombstone
from streams.pipeline.decode import Decode
from streams.pipeline.offsets import Partitions
from streams.pipeline.pauses import ConsumerControl, HeldBound
from streams.pipeline.record import Record
from streams.pipeline.step import Forward, Step

_EARLIEST = -(1 << 62)  # a record that never waits
_UNKNOWN_MARK = 0  # a cached high watermark below this was not fetched yet


class TimeOrder(Forward):
    """Hands on the records of joined topics smallest event time first (see the module
    docstring). ``sides``: for each join, the topics of its stream and of its table."""

    def __init__(
        self,
        next: Step,
        *,
        sides: Sequence[tuple[Collection[str], Collection[str]]],
        decode: Decode,
        consumer: ConsumerControl,
        partitions: Partitions,
        max_waiting: int = 10_000,
    ) -> None:
        super().__init__(next)
        self._others: dict[str, set[str]] = {}  # topic -> the topics of the other side
        for stream, table in sides:
            for mine, theirs in ((stream, table), (table, stream)):
                for topic in mine:
                    self._others.setdefault(topic, set()).update(theirs)
        self._decode = decode
        self._consumer = consumer
        self._partitions = partitions
        self._held: dict[TP, deque[tuple[int, Record]]] = {}  # in hand: (event time, record)
        self._read: dict[TP, int] = {}  # the largest event time handed on, per partition
        self._bound = HeldBound(consumer, max_waiting)
        self._handed: set[TP] = set()  # partitions that handed a record on since they moved

    def submit(self, record: Record) -> None:
        if record.topic not in self._others:
            self.next.submit(record)
            return
        tp = (record.topic, record.partition)
        held = self._held.get(tp)
        if held is None:
            held = self._held[tp] = deque()
        elif held and held[-1][1].offset >= record.offset:  # read again: the consumer went back
            while held and held[-1][1].offset >= record.offset:
                held.pop()
        held.append((self._time(record), record))

    def poll(self) -> None:
        self._forget_rewound()
        self._hand_on()
        self._bound.apply(self._held)
        self.next.poll()

    def revoked(self, partitions: Sequence[TP]) -> None:
        for tp in partitions:
            self._held.pop(tp, None)
            self._read.pop(tp, None)
            self._handed.discard(tp)
        self._bound.forget(partitions)
        self.next.revoked(partitions)

    # -- the order ---------------------------------------------------------------------------
    def _time(self, record: Record) -> int:
        try:
            env = self._decode(record)
        except DecodeError:
            return _EARLIEST
        return _EARLIEST if isinstance(env, Tombstone) else env.time_ms

    def _hand_on(self) -> None:
        """Each partition number's smallest event time first, while it may go."""
        held = self._held
        heads = [(q[0][0], tp) for tp, q in held.items() if q]
        heapq.heapify(heads)
        while heads:
            time_ms, tp = heapq.heappop(heads)
            if not self._may_go(tp, time_ms):
                continue  # waits; the other partitions go on
            queue = held[tp]
            _, record = queue.popleft()
            self._handed.add(tp)
            if time_ms > self._read.get(tp, _EARLIEST):
                self._read[tp] = time_ms
            self.next.submit(record)
            if queue:
                heapq.heappush(heads, (queue[0][0], tp))

    def _may_go(self, tp: TP, time_ms: int) -> bool:
        """Whether no partition of the other side can still bring an earlier record: each
        has a record in hand (the heap takes the earlier first), has read up to
        ``time_ms``, or has nothing more to read."""
        if time_ms == _EARLIEST:
            return True
        partition = tp[1]
        for topic in self._others[tp[0]]:
            other = (topic, partition)
            if self._held.get(other) or self._read.get(other, _EARLIEST) >= time_ms:
                continue
            if self._lag(other):
                return False
        return True

    def _lag(self, tp: TP) -> bool:
        """Whether ``tp`` has records not read yet (not assigned here: no). Where it is
        comes from the chain: nothing of it is in hand, so it is where its last record
        handed on left it, or at its committed offset."""
        po = self._partitions.get(tp)
        if po is None:
            return False
        offset = po.position if po.position is not None else po.committed
        if offset is None:
            return False
        part = TopicPartition(*tp)
        _low, high = self._consumer.get_watermark_offsets(part, cached=True)
        if high < _UNKNOWN_MARK:  # not fetched yet: ask the broker
            _low, high = self._consumer.get_watermark_offsets(part, timeout=5.0)
        return bool(high > offset)

    def _forget_rewound(self) -> None:
        """Drop what is in hand of a partition rewound to its commit (a recovery, an aborted
        transaction: ``Partitions.rewind_to_committed`` forgets its position): the consumer
        reads it all again from there, a paused partition too once resumed."""
        for tp in list(self._handed):
            po = self._partitions.get(tp)
            if po is not None and po.position is None:
                self._handed.discard(tp)
                self._held.pop(tp, None)
                self._read.pop(tp, None)
                self._bound.release([tp])
