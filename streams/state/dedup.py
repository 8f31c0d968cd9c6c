"""Deduplication over a store: remember each id for a window, count what comes twice.

The dedup step of a topology keeps one store; its keys are the ids seen (envelope ids by
default), its values empty, each with a time to live equal to the window. Because the
store is changelog-backed and partitioned like the input, what was seen survives restarts
and moves with its partition on a rebalance. An id is remembered from ``now`` (the time
passed in, normally the processing clock) for ``ttl`` seconds.

Cost per record: one store read, and one buffered write for a first sighting.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from streams.logs import get_logger
from streams.state.base import Transaction

_log = get_logger("streams.state.dedup")
_stdlib = logging.getLogger("streams.state.dedup")


class Dedup:
    """``seen``/``mark`` over the current transaction of one store partition.

    ``transaction`` returns the partition's current transaction (pass
    ``store_partition.transaction``); it is called per operation because a partition
    starts a fresh transaction after each checkpoint. ``ttl`` is the window in seconds.
    ``duplicates`` and ``unique`` count the outcomes of :meth:`first` since creation.
    """

    def __init__(self, transaction: Callable[[], Transaction], ttl: float) -> None:
        if ttl <= 0:
            raise ValueError(f"the dedup window must be positive seconds, got {ttl!r}")
        self._transaction = transaction
        self.ttl = ttl
        self.duplicates = 0
        self.unique = 0

    def seen(self, id_: bytes | str, now: float) -> bool:
        """True when ``id_`` was marked within its window as of ``now``."""
        return self._transaction().exists(id_, now=now)

    def mark(self, id_: bytes | str, now: float, ttl: float | None = None) -> None:
        """Remember ``id_`` from ``now`` for ``ttl`` seconds (default: the window)."""
        self._transaction().set(id_, b"", ttl=self.ttl if ttl is None else ttl, now=now)

    def first(self, id_: bytes | str, now: float) -> bool:
        """True (and marks it) the first time ``id_`` is seen in its window; else counts a
        duplicate, logs it at DEBUG with the id, and returns False."""
        if self._transaction().put_if_absent(id_, b"", ttl=self.ttl, now=now):
            self.unique += 1
            return True
        self.duplicates += 1
        if _stdlib.isEnabledFor(logging.DEBUG):
            _log.debug("duplicate dropped", id=id_ if isinstance(id_, str) else id_.hex())
        return False
