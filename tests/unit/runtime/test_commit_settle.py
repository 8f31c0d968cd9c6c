"""``settle_changelog``: how a checkpoint or a transaction treats store changes a flush
wrote. A write lost with a broker is an outage (recovery redoes the interval); a write the
broker refused stops the instance (the input offsets are never committed past it)."""

from __future__ import annotations

from typing import Any

import pytest

from streams.pipeline.errors import BrokerUnavailable
from streams.runtime.commit.positions import settle_changelog
from streams.state import ChangelogWriteError


class _Sink:
    def flush(self, timeout: float) -> int:
        return 0  # every write settled: acknowledged or failed


class _State:
    def __init__(self, transient: bool) -> None:
        self.transient = transient

    def check_delivered(self) -> None:
        raise ChangelogWriteError("a changelog record was not written", transient=self.transient)


def test_a_changelog_write_lost_with_a_broker_is_recovered_from() -> None:
    state: Any = _State(transient=True)
    with pytest.raises(BrokerUnavailable, match="not written"):
        settle_changelog(_Sink(), state, 1.0)  # type: ignore[arg-type]


def test_a_refused_changelog_write_stops_the_instance() -> None:
    state: Any = _State(transient=False)
    with pytest.raises(ChangelogWriteError) as refused:
        settle_changelog(_Sink(), state, 1.0)  # type: ignore[arg-type]
    assert not isinstance(refused.value, BrokerUnavailable)
