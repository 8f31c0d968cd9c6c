"""`streams run` shows failure routing's counters once it has counted any."""

from __future__ import annotations

import io

from streams.runtime import Stats, StatusReporter


def test_live_line_shows_retried_recovered_and_dead_lettered() -> None:
    out = io.StringIO()
    reporter = StatusReporter("shop", stream=out, live=True, interval_s=0)
    reporter.show(Stats(consumed=10))
    assert "retried" not in out.getvalue()
    failures = {"retried": 3, "recovered": 1, "dead_lettered": 2, "dlq_depth": {}}
    reporter.show(Stats(consumed=20, failures=failures))
    assert "| 3 retried, 1 recovered, 2 dead-lettered" in out.getvalue()
