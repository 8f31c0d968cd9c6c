"""Counters of failure routing, and the one WARNING per dead-lettered record.

``retried``: records written to a retry tier; ``recovered``: records that succeeded after
at least one failure; ``dead_lettered``: records written to a DLQ; ``dlq_depth``: records
in each DLQ topic when last measured; ``retried_by_topic`` and ``dead_lettered_by_topic``:
the same two counts per input topic (the metrics endpoint's labels). Counting is a few
integer additions per failure (nothing on the success path of a record that never
failed). The WARNING carries the record's ids and coordinates and the exception's class,
never its key, value or message (messages often quote the payload).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from streams.codec.headers import ID, TYPE
from streams.failures.headers import EXCEPTION, Headers, header_text
from streams.failures.routing import Route
from streams.logs import get_logger

_log = get_logger("streams.failures")


@dataclass
class FailureMetrics:
    """Counters for one app; the runtime's metrics interface reads ``snapshot()``."""

    retried: int = 0
    recovered: int = 0
    dead_lettered: int = 0
    dlq_depth: dict[str, int] = field(default_factory=dict)
    by_error: Counter[str] = field(default_factory=Counter)
    retried_by_topic: Counter[str] = field(default_factory=Counter)
    dead_lettered_by_topic: Counter[str] = field(default_factory=Counter)

    def routed(self, route: Route, acked: bool = True) -> None:
        """Count a failed record once its write to ``route.topic`` is acknowledged.

        Logs one WARNING per dead-lettered record (ids, coordinates, exception class).
        """
        if not acked:
            return
        self.by_error[route.info.exception] += 1
        if not route.dead_letter:
            self.retried += 1
            self.retried_by_topic[route.info.origin.topic] += 1
            return
        self.dead_lettered += 1
        self.dead_lettered_by_topic[route.info.origin.topic] += 1
        self.dlq_depth[route.topic] = self.dlq_depth.get(route.topic, 0) + 1
        info = route.info
        _log.warning(
            "record dead-lettered",
            app_id=info.app_id,
            dlq=route.topic,
            event_id=header_text(route.headers, ID),
            event_type=header_text(route.headers, TYPE),
            topic=info.origin.topic,
            partition=info.origin.partition,
            offset=info.origin.offset,
            exception=info.exception,
            attempts=info.attempts,
            stage=info.stage.value,
            step=info.step,
        )

    def succeeded_after_failure(self, count: int = 1) -> None:
        """Count records that succeeded on a retry (they carried error headers)."""
        self.recovered += count

    def measured_dlq_depth(self, topic: str, depth: int) -> None:
        self.dlq_depth[topic] = depth

    def snapshot(self) -> dict[str, Any]:
        return {
            "retried": self.retried,
            "recovered": self.recovered,
            "dead_lettered": self.dead_lettered,
            "dlq_depth": dict(self.dlq_depth),
            "by_error": dict(self.by_error),
            "retried_by_topic": dict(self.retried_by_topic),
            "dead_lettered_by_topic": dict(self.dead_lettered_by_topic),
        }


def is_retry_record(headers: Headers | None) -> bool:
    """True when a record carries error headers (it failed before): a success counts as
    ``recovered``. Cheap: a scan of a handful of header names."""
    return header_text(headers, EXCEPTION) is not None
