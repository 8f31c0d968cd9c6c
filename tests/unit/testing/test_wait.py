"""wait_until: returns the condition's value, or fails with what was seen; never hangs."""

from __future__ import annotations

import itertools

import pytest

from streams.errors import StreamsError
from streams.testing import WaitTimeoutError, wait_until


def test_returns_the_first_truthy_value_of_the_condition() -> None:
    calls = itertools.count(1)
    assert wait_until(lambda: next(calls) >= 3 and "done", timeout=5, interval=0.001) == "done"


def test_timeout_names_what_was_awaited_and_what_was_seen() -> None:
    with pytest.raises(WaitTimeoutError) as info:
        wait_until(lambda: False, timeout=0.05, interval=0.01, what="3 orders", seen=lambda: "2")
    message = str(info.value)
    assert "3 orders did not hold within 0.05 s" in message
    assert "seen: 2" in message


def test_timeout_is_a_failed_assertion_and_a_streams_error() -> None:
    # pytest shows it as a failed expectation; `except StreamsError` catches it too.
    with pytest.raises(WaitTimeoutError) as info:
        wait_until(lambda: None, timeout=0.0)
    assert isinstance(info.value, AssertionError)
    assert isinstance(info.value, StreamsError)


def test_errors_from_the_condition_propagate_at_once() -> None:
    def broken() -> bool:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        wait_until(broken, timeout=60)
