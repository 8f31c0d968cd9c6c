"""Reading a changelog's offsets before a restore: a leader not known yet is waited for.

A changelog created a moment before its first restore can answer NOT_LEADER_FOR_PARTITION
while its leader is elected (seen in CI: an instance stopped with "cannot read the offsets
of ...-changelog[0]"). A broker cannot be made to answer so on demand; a consumer that
does stands in for it. One that never answers (a node lost, seen in CI: the offsets timed
out) is an outage the runtime waits out, not a reason to stop."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from streams.state.errors import RestoreError
from streams.state.restore import watermarks


class Answers:
    """A consumer whose ``get_watermark_offsets`` raises ``errors`` first, then answers."""

    def __init__(self, *errors: int, answer: tuple[int, int] = (3, 10)) -> None:
        self.errors = list(errors)
        self.answer = answer
        self.calls = 0

    def get_watermark_offsets(self, tp: Any, timeout: float, cached: bool) -> tuple[int, int]:
        self.calls += 1
        if self.errors:
            raise KafkaException(KafkaError(self.errors.pop(0)))
        return self.answer


def test_a_leader_being_elected_is_asked_again() -> None:
    consumer = Answers(KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE)
    assert watermarks(consumer, "app-kv-changelog", 0, timeout=10) == (3, 10)  # type: ignore[arg-type]
    assert consumer.calls == 3


def test_an_error_that_does_not_clear_fails_at_once() -> None:
    consumer = Answers(KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(RestoreError, match=r"app-kv-changelog\[1\]") as raised:
        watermarks(consumer, "app-kv-changelog", 1, timeout=10)  # type: ignore[arg-type]
    assert consumer.calls == 1
    assert not raised.value.transient  # the runtime stops: waiting would not help


def test_a_leader_that_never_comes_fails_at_the_timeout_as_an_outage() -> None:
    consumer = Answers(*[KafkaError.NOT_LEADER_FOR_PARTITION] * 1_000)
    with pytest.raises(RestoreError, match=r"Not leader|NOT_LEADER") as raised:
        watermarks(consumer, "app-kv-changelog", 0, timeout=0.3)  # type: ignore[arg-type]
    assert 1 < consumer.calls < 1_000
    assert raised.value.transient  # the runtime waits for the broker and restores again
