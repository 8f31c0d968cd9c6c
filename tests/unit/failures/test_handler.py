"""The failure handler composed the way a runtime composes it, on a model of Kafka
(``tests.unit.failures.test_model.ModelRuntime``): the issue's ordering scenarios, before the native
runtime calls the handler."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

from confluent_kafka import Message

from streams.failures.handler import Decision, FailureHandler
from streams.failures.headers import parse_failure_headers
from streams.failures.parked import ParkedRecord
from streams.failures.policy import RetryPolicy
from streams.failures.routing import FailedRecord
from streams.failures.waiting import WaitingEntry
from tests.unit.failures.test_model import INPUT, T0, ModelRuntime, Msg, Processor


def runtime(processor: Processor, policy: RetryPolicy, **kw: Any) -> ModelRuntime:
    return ModelRuntime(FailureHandler("app", policy, **kw), processor)


def produce(rt: ModelRuntime, *records: tuple[bytes, bytes]) -> None:
    for key, value in records:
        rt.send(INPUT, key, value, [("ce_id", value)])


POLICY = RetryPolicy.parse("1s, 30s, 5m")


def test_a_record_failing_twice_then_succeeding_keeps_its_place_among_its_keys_records() -> None:
    def flaky(value: bytes, tried: int) -> None:
        if value == b"a1" and tried < 2:
            raise TimeoutError("db")

    rt = runtime(flaky, POLICY)
    produce(rt, (b"A", b"a0"), (b"A", b"a1"), (b"B", b"b1"), (b"A", b"a2"), (b"B", b"b2"))
    produce(rt, (b"A", b"a3"), (b"B", b"b3"))
    rt.run(rt.drained)

    assert rt.output_values(b"A") == [b"a0", b"a1", b"a2", b"a3"]  # a1 once, in its place
    assert rt.output_values(b"B") == [b"b1", b"b2", b"b3"]
    times = {v: t for _, v, t in rt.outputs}
    # Tier 1 (1 s) then tier 2 (30 s): a1 succeeds on its third attempt, 31 s later...
    assert times[b"a1"] >= T0 + timedelta(seconds=31)
    # ...and no record of another key waited for it.
    assert max(times[b] for b in (b"b1", b"b2", b"b3")) < T0 + timedelta(seconds=1)
    assert rt.dlq() == []
    assert rt.handler.metrics.snapshot()["retried"] == 2
    assert rt.handler.metrics.snapshot()["recovered"] == 1


def test_a_poison_record_ends_in_the_dlq_and_its_key_moves_on_in_order() -> None:
    def poison(value: bytes, tried: int) -> None:
        if value == b"a1":
            raise RuntimeError("always")

    rt = runtime(poison, POLICY)
    produce(rt, (b"A", b"a1"), (b"A", b"a2"), (b"B", b"b1"), (b"A", b"a3"))
    rt.run(rt.drained)

    assert rt.output_values(b"A") == [b"a2", b"a3"]
    assert rt.output_values(b"B") == [b"b1"]
    (dead,) = rt.dlq()
    info = parse_failure_headers(dead.h)
    assert info is not None
    assert (dead.k, dead.v, info.attempts, info.origin.offset) == (b"A", b"a1", 4, 0)
    assert rt.tries[b"a1"] == 4
    times = {v: t for _, v, t in rt.outputs}
    assert times[b"a2"] >= T0 + timedelta(seconds=1 + 30 + 300)  # waited behind a1


def test_garbage_goes_to_the_dlq_without_retries_and_holds_nothing_up() -> None:
    rt = runtime(lambda value, tried: None, POLICY)
    produce(rt, (b"A", b"a1"), (b"A", b"\x00garbage"), (b"A", b"a2"))
    rt.run(rt.drained)
    assert rt.output_values(b"A") == [b"a1", b"a2"]
    assert [m.v for m in rt.dlq()] == [b"\x00garbage"]
    assert rt.tries[b"\x00garbage"] == 1
    assert rt.now < T0 + timedelta(seconds=1)


def test_a_released_record_that_fails_keeps_later_records_behind_it() -> None:
    def flaky(value: bytes, tried: int) -> None:
        if value in (b"a1", b"a2") and tried < 1:
            raise TimeoutError("db")

    rt = runtime(flaky, POLICY)
    produce(rt, (b"A", b"a1"), (b"A", b"a2"), (b"A", b"a3"))
    rt.run(rt.drained)
    assert rt.output_values(b"A") == [b"a1", b"a2", b"a3"]
    assert rt.decisions.count(Decision.PARK) == 2


def test_without_ordering_later_records_do_not_wait() -> None:
    def flaky(value: bytes, tried: int) -> None:
        if value == b"a1" and tried < 1:
            raise TimeoutError("db")

    rt = runtime(flaky, RetryPolicy.parse("1s", ordered=False))
    produce(rt, (b"A", b"a1"), (b"A", b"a2"))
    rt.run(rt.drained)
    assert rt.output_values(b"A") == [b"a2", b"a1"]


def test_a_restart_while_records_wait_loses_nothing_and_keeps_order() -> None:
    """The process dies while a1 waits in a retry tier with a2, a3 parked behind it, and
    comes back with its state (the stores) but re-reads what it had not committed: the
    last input records and the retry record. Each record is output, in order per key;
    redelivery may repeat an output (dedup's job), never reorder or lose one."""
    stores: dict[tuple[str, int], dict[bytes, WaitingEntry[ParkedRecord]]] = {}

    def store_for(topic: str, partition: int) -> dict[bytes, WaitingEntry[ParkedRecord]]:
        return stores.setdefault((topic, partition), {})

    def flaky(value: bytes, tried: int) -> None:
        if value == b"a1" and tried < 2:
            raise TimeoutError("db")

    rt = runtime(flaky, POLICY, store_for=store_for)
    produce(rt, (b"A", b"a1"), (b"B", b"b1"), (b"A", b"a2"), (b"A", b"a3"), (b"B", b"b2"))
    rt.run(lambda: any(v == b"a1" for m in rt.topics.get("app-orders-retry-2", []) for v in [m.v]))
    assert rt.output_values(b"A") == []
    assert stores[(INPUT, 0)][b"A"].parked != ()

    # Restart: new handler over the same stores; uncommitted positions are read again.
    restarted = runtime(flaky, POLICY, store_for=store_for)
    restarted.topics, restarted.now, restarted.tries = rt.topics, rt.now, rt.tries
    restarted.outputs = list(rt.outputs)
    restarted.positions = {t: max(0, p - 2) for t, p in rt.positions.items()}
    produce(restarted, (b"A", b"a4"))
    restarted.run(restarted.drained)

    def first_seen(key: bytes) -> list[bytes]:
        out: list[bytes] = []
        for value in restarted.output_values(key):
            if value not in out:
                out.append(value)
        return out

    assert first_seen(b"A") == [b"a1", b"a2", b"a3", b"a4"]
    assert first_seen(b"B") == [b"b1", b"b2"]
    assert Decision.SKIP in restarted.decisions  # stale copies were recognised
    assert stores[(INPUT, 0)] == {}  # every key free again


def input_record(offset: int, value: bytes) -> FailedRecord:
    return FailedRecord.from_message(cast(Message, Msg(INPUT, offset, b"A", value, [])))


def test_after_a_crash_a_released_head_never_finished_is_processed_again() -> None:
    stores: dict[tuple[str, int], dict[bytes, WaitingEntry[ParkedRecord]]] = {}

    def store_for(topic: str, partition: int) -> dict[bytes, WaitingEntry[ParkedRecord]]:
        return stores.setdefault((topic, partition), {})

    handler = FailureHandler("app", POLICY, store_for=store_for)
    a1, a2, a3 = input_record(0, b"a1"), input_record(1, b"a2"), input_record(2, b"a3")
    assert handler.on_record(a1).decision is Decision.PROCESS
    route, _ = handler.on_failure(a1, TimeoutError())
    assert handler.on_record(a2).decision is Decision.PARK
    assert handler.on_record(a3).decision is Decision.PARK
    retry_copy = FailedRecord.from_message(
        cast(Message, Msg(route.topic, 0, route.key, route.value, route.headers))
    )
    assert handler.on_record(retry_copy).record is retry_copy
    released = handler.on_success(retry_copy)
    assert released is not None
    assert released.value == b"a2"
    # The process dies while a2 is in hand; its trigger (the retry copy) is read again.
    handler = FailureHandler("app", POLICY, store_for=store_for)
    admission = handler.on_record(retry_copy)
    assert admission.decision is Decision.PROCESS
    assert admission.record == released
    nxt = handler.on_success(released)
    assert nxt is not None
    assert nxt.value == b"a3"
    assert handler.on_success(nxt) is None
    assert handler.on_record(retry_copy).decision is Decision.SKIP


def test_an_input_record_read_again_while_it_heads_its_key_is_processed_again() -> None:
    handler = FailureHandler("app", POLICY)
    a1, a2 = input_record(0, b"a1"), input_record(1, b"a2")
    handler.on_failure(a1, TimeoutError())  # its retry copy may be lost in a crash
    handler.on_record(a2)
    again = handler.on_record(a1)
    assert again.decision is Decision.PROCESS
    released = handler.on_success(a1)
    assert released is not None
    assert released.value == b"a2"
