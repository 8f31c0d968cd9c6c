"""Failure routing in the TestDriver, without a broker: what goes to retry tiers and the DLQ,
order per key through retries, and due times on the driver's clock."""

from __future__ import annotations

from collections import Counter
from functools import partial

import factories
import pytest

from streams.envelope import Envelope
from streams.errors import StreamsError
from streams.failures import RetryPolicy
from streams.failures.headers import KIP_1034_HEADERS
from streams.testing import TestDriver
from streams.topology import TopologyBuilder, owned

payment = partial(factories.payment, source="test")


class Flaky:
    """Fails ``times`` times on payments named in ``flaky``; always on negative amounts."""

    def __init__(self, flaky: set[str], times: int = 2) -> None:
        self.flaky = flaky
        self.times = times
        self.attempts: Counter[str] = Counter()

    def __call__(self, env: Envelope) -> Envelope:
        pid = env.data["payment_id"]
        self.attempts[pid] += 1
        if pid in self.flaky and self.attempts[pid] <= self.times:
            raise TimeoutError(f"timed out on {pid}")
        if env.data["amount_cents"] < 0:
            raise ValueError("negative amount")
        return env


def driver(step: Flaky, retry: str | RetryPolicy = "1s, 30s") -> TestDriver:
    builder = TopologyBuilder("pay", retry=retry)
    builder.source("payments", type="payment.captured", version=1).map(step, name="settle").to(
        owned("out"), type="payment.captured", version=1
    )
    return TestDriver(builder.build())


def out(d: TestDriver) -> list[str]:
    return [e.data["payment_id"] for e in d.read("pay-out")]


def test_a_retry_waits_for_its_due_time_and_its_key_waits_behind_it() -> None:
    step = Flaky({"a-2"})
    with driver(step) as d:
        d.pipe("payments", [payment("a-1", "a"), payment("a-2", "a"), payment("a-3", "a")])
        d.pipe("payments", payment("b-1", "b"))
        assert out(d) == ["a-1", "b-1"]  # other keys are not held up
        assert [r.topic for r in d.retried] == ["pay-payments-retry-1"]
        assert d.waiting_retries == 1
        d.advance_time(990)  # each piped record moved the clock 1 ms too
        assert out(d) == [] and step.attempts["a-2"] == 1  # not due yet
        d.advance_time(10)
        assert out(d) == [] and [r.topic for r in d.retried][-1] == "pay-payments-retry-2"
        d.advance_time(29_000)
        assert out(d) == [] and step.attempts["a-2"] == 2
        d.advance_time(1_000)
        assert out(d) == ["a-2", "a-3"]
        assert d.waiting_retries == 0 and d.dead_letters == []
        assert step.attempts["a-3"] == 1  # processed once, after a-2 succeeded


def test_a_permanent_failure_is_dead_lettered_after_its_attempts_then_its_key_moves_on() -> None:
    step = Flaky(set())
    with driver(step, RetryPolicy.parse("1s, 1s")) as d:
        d.pipe("payments", [payment("k-1", "k", -1), payment("k-2", "k")])
        d.advance_time(1_000)
        d.advance_time(1_000)
        (dead,) = d.dead_letters
        assert dead.topic == "pay-payments-dlq" and dead.key == b"k"
        assert dead.info.attempts == 3 and dead.info.exception.endswith("ValueError")
        assert dead.info.step == "settle" and dead.info.origin.offset == 0
        assert {name for name, _ in dead.headers} >= set(KIP_1034_HEADERS)
        assert out(d) == ["k-2"]


def test_undecodable_bytes_are_dead_lettered_without_retries() -> None:
    with driver(Flaky(set())) as d:
        d.pipe_raw("payments", b"\x00 not an envelope", key=b"k")
        d.pipe("payments", payment("k-1", "k"))
        (dead,) = d.dead_letters
        assert dead.value == b"\x00 not an envelope" and dead.info.attempts == 1
        assert dead.info.stage.value == "decode" and d.retried == []
        assert out(d) == ["k-1"]


def test_non_retryable_errors_skip_the_tiers() -> None:
    policy = RetryPolicy.parse("1s", non_retryable=[ValueError])
    with driver(Flaky(set()), policy) as d:
        d.pipe("payments", payment("k-1", "k", -1))
        assert d.retried == [] and d.dead_letters[0].info.attempts == 1


def test_a_step_retry_policy_overrides_the_topology_one() -> None:
    step = Flaky(set())
    builder = TopologyBuilder("pay", retry="1s")
    builder.source("payments", type="payment.captured", version=1).map(
        step, name="settle", retry=RetryPolicy.no_retries()
    ).to(owned("out"), type="payment.captured", version=1)
    with TestDriver(builder.build()) as d:
        d.pipe("payments", payment("k-1", "k", -1))
        assert d.retried == [] and len(d.dead_letters) == 1


def test_routing_needs_the_codec() -> None:
    builder = TopologyBuilder("pay", retry="1s")
    builder.source("payments", type="payment.captured", version=1).to(
        owned("out"), type="payment.captured", version=1
    )
    with pytest.raises(StreamsError, match="codec"):
        TestDriver(builder.build(), codec=None)


def test_a_retried_record_is_not_taken_for_a_duplicate_of_its_failed_attempt() -> None:
    step = Flaky({"d-2"}, times=1)
    builder = TopologyBuilder("pay", retry="1s")
    unique = builder.source("payments", type="payment.captured", version=1).dedup(
        ttl=3600, backend="memory"
    )
    unique.map(step, name="settle").to(owned("out"), type="payment.captured", version=1)
    with TestDriver(builder.build()) as d:
        d.pipe("payments", [payment(f"d-{i}", "k") for i in range(1, 4)])
        d.advance_time(1_000)
        assert out(d) == ["d-1", "d-2", "d-3"]
