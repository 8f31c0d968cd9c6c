"""A model runtime for failure-handler tests (shared; it holds no tests itself).

``ModelRuntime`` is a minimal single-threaded runtime over in-memory topics: it polls the
input topic and the retry tiers, sifts retry records through the gate (pausing a tier
until its head is due), asks the handler what to do with each record, processes, and
writes the routes the handler returns. Time is simulated, so retry delays cost nothing
and "not delayed" is exact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from confluent_kafka import Message

from streams.codec.errors import MalformedRecordError
from streams.failures.handler import Decision, FailureHandler, RecordLike
from streams.failures.headers import Stage
from streams.failures.parked import ParkedRecord
from streams.failures.retry_holds import Hold, RetryHolds
from streams.failures.routing import FailedRecord

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TICK = timedelta(milliseconds=100)
INPUT = "orders"


@dataclass
class Msg:
    """A consumed record, with the accessors of ``confluent_kafka.Message``."""

    t: str
    o: int
    k: bytes | None
    v: bytes | None
    h: list[tuple[str, bytes | None]]

    def topic(self) -> str:
        return self.t

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self.o

    def key(self) -> bytes | None:
        return self.k

    def value(self) -> bytes | None:
        return self.v

    def headers(self) -> list[tuple[str, bytes | None]]:
        return self.h

    def timestamp(self) -> tuple[int, int]:
        return (1, 0)

    def error(self) -> None:
        return None


Processor = Callable[[bytes, int], None]
"""Raises to fail; gets the value and how many times this value was tried before."""


@dataclass
class ModelRuntime:
    handler: FailureHandler
    processor: Processor
    topics: dict[str, list[Msg]] = field(default_factory=dict)
    positions: dict[str, int] = field(default_factory=dict)
    paused: set[str] = field(default_factory=set)
    now: datetime = T0
    outputs: list[tuple[bytes, bytes, datetime]] = field(default_factory=list)
    tries: dict[bytes, int] = field(default_factory=dict)
    decisions: list[Decision] = field(default_factory=list)
    dead: list[tuple[bytes, datetime]] = field(default_factory=list)
    holds: RetryHolds = field(default_factory=RetryHolds)

    def send(self, topic: str, key: bytes | None, value: bytes | None, headers: Any) -> None:
        log = self.topics.setdefault(topic, [])
        log.append(Msg(topic, len(log), key, value, list(headers)))

    def poll(self) -> list[Msg]:
        batch: list[Msg] = []
        for topic in self.handler.topics_to_read([INPUT]):
            if topic in self.paused:
                continue
            log, pos = self.topics.get(topic, []), self.positions.get(topic, 0)
            batch.extend(log[pos : pos + 3])  # a small fetch: interleaves topics
            self.positions[topic] = min(len(log), pos + 3)
        return batch

    def hold(self, holds: list[Hold]) -> None:
        for h in holds:
            self.paused.add(h.topic)
            self.positions[h.topic] = h.offset  # seek back to the head

    def step(self) -> None:
        holds = self.holds
        sifted = holds.sift(self.poll(), now=self.now)
        self.hold(sifted.held)
        for message in sifted.ready:
            self.handle(message)
        for h in holds.due(now=self.now):
            self.paused.discard(h.topic)
        self.now += TICK

    def handle(self, message: Msg) -> None:
        record = FailedRecord.from_message(cast(Message, message))
        admission = self.handler.on_record(record)
        self.decisions.append(admission.decision)
        todo: RecordLike | None = admission.record
        while todo is not None:
            todo = self.process(todo)

    def process(self, record: RecordLike) -> ParkedRecord | None:
        value, key = record.value or b"", record.key or b""
        tried = self.tries.get(value, 0)
        self.tries[value] = tried + 1
        try:
            if value.startswith(b"\x00"):
                raise MalformedRecordError("garbage")
        except MalformedRecordError as exc:
            route, nxt = self.handler.on_failure(record, exc, stage=Stage.DECODE)
        else:
            try:
                self.processor(value, tried)
            except Exception as exc:
                route, nxt = self.handler.on_failure(record, exc, step="price", now=self.now)
            else:
                self.outputs.append((key, value, self.now))
                return self.handler.on_success(record)
        self.send(route.topic, route.key, route.value, route.headers)
        if route.dead_letter:
            self.dead.append((value, self.now))
        return nxt

    def run(self, until: Callable[[], bool], steps: int = 50_000) -> None:
        for _ in range(steps):
            if until():
                return
            self.step()
        raise AssertionError(f"not done after {steps} steps; outputs {self.outputs}")

    def drained(self) -> bool:
        return (
            all(
                self.positions.get(t, 0) >= len(log)
                for t, log in self.topics.items()
                if "dlq" not in t
            )
            and not self.holds.held
        )

    def output_values(self, key: bytes) -> list[bytes]:
        return [v for k, v, _ in self.outputs if k == key]

    def dlq(self) -> list[Msg]:
        return self.topics.get(f"app-{INPUT}-dlq", [])
