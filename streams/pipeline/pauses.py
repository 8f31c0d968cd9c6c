"""Pausing the consumer's partitions from several steps, and bounding what a step holds.

Three steps of the chain pause partitions for reasons of their own: the retry gate holds
a retry partition until its head is due, ``TimeOrder`` and the concurrency step pause a
partition of which they hold too many records. A partition is read again only when no
step wants it paused, so each step pauses and resumes through its own ``PauseView`` of
one ``Pauses``; the runtime forgets the pauses of partitions that leave the instance
(librdkafka starts a partition it assigns unpaused).

``HeldBound`` is the memory bound of a step that holds records: a partition with
``max_held`` records held is paused, and resumed once half of them went on. librdkafka
drops what it prefetched of a paused partition and fetches it again from the next
offset on resume, so a paused partition costs no memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sized
from typing import Any, Protocol

from confluent_kafka import TopicPartition

from streams.coordinates import TP


class ConsumerControl(Protocol):
    """What the steps ask of the consumer (``confluent_kafka.Consumer`` is one)."""

    def pause(self, partitions: list[TopicPartition], /) -> None: ...
    def resume(self, partitions: list[TopicPartition], /) -> None: ...
    def seek(self, partition: TopicPartition, /) -> None: ...
    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float = ..., cached: bool = ...
    ) -> Any: ...


class Pauses:
    """Who wants which partition paused (see the module docstring). Runtime thread only."""

    def __init__(self, consumer: ConsumerControl) -> None:
        self.consumer = consumer
        self._wanted: dict[TP, set[str]] = {}

    def view(self, owner: str) -> PauseView:
        """The consumer as step ``owner`` pauses and resumes it."""
        return PauseView(self, owner)

    def pause(self, owner: str, partitions: list[TopicPartition]) -> None:
        fresh = []
        for tp in partitions:
            key = (tp.topic, tp.partition)
            wanted = self._wanted.setdefault(key, set())
            if not wanted:
                fresh.append(tp)
            wanted.add(owner)
        if fresh:
            self.consumer.pause(fresh)

    def resume(self, owner: str, partitions: list[TopicPartition]) -> None:
        free = []
        for tp in partitions:
            key = (tp.topic, tp.partition)
            wanted = self._wanted.get(key)
            if wanted is None or owner not in wanted:
                continue
            wanted.discard(owner)
            if not wanted:
                del self._wanted[key]
                free.append(tp)
        if free:
            self.consumer.resume(free)

    def paused(self, tp: TP) -> bool:
        return tp in self._wanted

    def forget(self, partitions: Iterable[TP]) -> None:
        """Partitions that left the instance: whoever paused them, they are not paused now."""
        for tp in partitions:
            self._wanted.pop(tp, None)


class PauseView:
    """The consumer as one step pauses and resumes it; seeks and watermarks pass through.
    Implements ``ConsumerControl``."""

    __slots__ = ("_owner", "_pauses")

    def __init__(self, pauses: Pauses, owner: str) -> None:
        self._pauses = pauses
        self._owner = owner

    def pause(self, partitions: list[TopicPartition], /) -> None:
        self._pauses.pause(self._owner, partitions)

    def resume(self, partitions: list[TopicPartition], /) -> None:
        self._pauses.resume(self._owner, partitions)

    def seek(self, partition: TopicPartition, /) -> None:
        self._pauses.consumer.seek(partition)

    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float = -1, cached: bool = False
    ) -> Any:
        return self._pauses.consumer.get_watermark_offsets(
            partition, timeout=timeout, cached=cached
        )


class HeldBound:
    """Pauses a partition of which ``max_held`` records are held, resumes it once half of
    them went on (see the module docstring)."""

    __slots__ = ("_control", "max_held", "paused")

    def __init__(self, control: ConsumerControl, max_held: int) -> None:
        self._control = control
        self.max_held = max_held
        self.paused: set[TP] = set()

    def apply(self, held: Mapping[TP, Sized]) -> None:
        """Pause the partitions with too many records in ``held``, resume those down to half."""
        limit = self.max_held
        full = [tp for tp, q in held.items() if len(q) >= limit and tp not in self.paused]
        if full:
            self.paused.update(full)
            self._control.pause([TopicPartition(*tp) for tp in full])
        drained = [tp for tp in self.paused if len(held.get(tp, ())) <= limit // 2]
        if drained:
            self.release(drained)

    def release(self, partitions: Iterable[TP]) -> None:
        """Resume those of ``partitions`` it paused, whatever they hold."""
        mine = [tp for tp in partitions if tp in self.paused]
        if mine:
            self.paused.difference_update(mine)
            self._control.resume([TopicPartition(*tp) for tp in mine])

    def forget(self, partitions: Iterable[TP]) -> None:
        """Partitions that left the instance: nothing to resume."""
        self.paused.difference_update(partitions)
