"""Riding out an outage: wait for the broker, have the committer undo, say so in the log."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from streams.pipeline.errors import BrokerUnavailable
from streams.runtime import recovery
from streams.runtime.recovery import Recovery


class Log:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str, dict[str, Any]]] = []

    def warning(self, event: str, **kw: Any) -> None:
        self.lines.append(("warning", event, kw))

    def info(self, event: str, **kw: Any) -> None:
        self.lines.append(("info", event, kw))


class Consumer:
    """Answers metadata requests after ``silent`` unanswered ones."""

    def __init__(self, silent: int) -> None:
        self.silent = silent

    def list_topics(self, timeout: float) -> object:
        if self.silent:
            self.silent -= 1
            raise KafkaException(KafkaError(KafkaError._TRANSPORT))
        return object()


class Committer:
    """Fails ``recover`` with each of ``failures`` in turn, then succeeds."""

    def __init__(self, *failures: str) -> None:
        self.failures = list(failures)
        self.recovered = 0

    def recover(self) -> None:
        if self.failures:
            raise BrokerUnavailable(self.failures.pop(0))
        self.recovered += 1


def recovery_of(consumer: Consumer, committer: Committer, log: Log, stop: bool = False) -> Recovery:
    return Recovery(
        consumer=consumer,
        committer=committer,  # type: ignore[arg-type]
        stopping=lambda: stop,
        log=log,  # type: ignore[arg-type]
    )


@pytest.fixture(autouse=True)
def no_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recovery, "_RETRY_S", 0.0)


def test_a_short_outage_is_one_warning_then_one_info() -> None:
    log, committer = Log(), Committer("coordinator not available")
    recovery_of(Consumer(silent=2), committer, log).recover(BrokerUnavailable("timed out"))
    assert committer.recovered == 1
    assert [(level, event) for level, event, _ in log.lines] == [
        ("warning", "broker unavailable: undone work will be redone from the last commit"),
        ("info", "recovered from broker outage"),
    ]
    assert log.lines[0][2] == {"error": "timed out"}


def test_a_long_outage_is_reported_again_with_what_still_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(recovery, "_REMIND_S", 0.0)  # a reminder at every attempt
    log = Log()
    committer = Committer("reading the committed offsets: timed out")
    recovery_of(Consumer(silent=1), committer, log).recover(BrokerUnavailable("timed out"))
    reminders = [kw["error"] for _, event, kw in log.lines if event == "broker still unavailable"]
    # no answer at first; then an answer, but the undo failed: the reminder names it
    assert reminders == [
        "no answer to a metadata request",
        "no answer to a metadata request (Local: Broker transport failure)",
        "reading the committed offsets: timed out",
    ]
    assert log.lines[-1][1] == "recovered from broker outage"


def test_a_stop_during_an_outage_returns_undoing_nothing() -> None:
    log, committer = Log(), Committer()
    recovery_of(Consumer(silent=0), committer, log, stop=True).recover(BrokerUnavailable("x"))
    assert committer.recovered == 0
    assert [event for _, event, _ in log.lines] == [
        "broker unavailable: undone work will be redone from the last commit"
    ]
