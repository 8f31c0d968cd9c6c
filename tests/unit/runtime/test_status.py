"""What `streams run` shows: a live line on a terminal, never a line per record."""

from __future__ import annotations

import io

from streams.runtime import Stats, StatusReporter


def test_live_line_is_rewritten_in_place_with_rate_and_lag() -> None:
    out = io.StringIO()
    reporter = StatusReporter("shop", stream=out, live=True, interval_s=0)
    reporter.show(Stats(consumed=1500, produced=1400, partitions=4, input_partitions=4, lag=250))
    reporter.close()
    text = out.getvalue()
    assert text.startswith("\r\x1b[2K")
    assert "shop: 4 input partitions | 1,500 in (" in text
    assert "| 1,400 out | lag 250" in text
    assert text.endswith("\n")


def test_the_line_says_which_partitions_it_counts() -> None:
    # one 3-partition input, two retry tiers and a repartition topic: 12 assigned
    out = io.StringIO()
    reporter = StatusReporter("nc1", stream=out, live=True, interval_s=0)
    reporter.show(Stats(partitions=12, input_partitions=3))
    assert "nc1: 3 input partitions (12 assigned) | " in out.getvalue()


def test_without_a_terminal_nothing_is_written_to_the_stream() -> None:
    out = io.StringIO()
    reporter = StatusReporter("shop", stream=out, live=False, interval_s=0)
    for n in range(100):
        reporter.show(Stats(consumed=n))
    reporter.close()
    assert out.getvalue() == ""
