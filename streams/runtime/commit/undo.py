"""Undoing the work since the last commit: after an outage (``Committer.recover``), after
outputs refused for their records' sake (``Committer.rewind``) and after an aborted
transaction. A partition whose stores an outage left closed (its restore interrupted) has
them restored before its records are read again.

Shared by the three committers: what they undo is the same (the writes, the store
changes, the partitions' positions); only the producer's fate differs (at-least-once keeps
it unless it is broken, exactly-once always starts a new one). The records whose outputs
were refused are remembered by the sink (``OutputSink.reset``): the work is done again
without them.

Without a transaction, store changes sent ahead to a changelog are there for good: an undo
writes their keys back with their committed values (``StateManager.abort(rewrite_sent=
True)``), or a restore after the next commit would bring back what was undone (a refused
record's dedup id, say, and its DLQ copy replayed later would be dropped as a duplicate).
"""

from __future__ import annotations

from collections.abc import Iterable

from streams.coordinates import TP
from streams.runtime.commit.context import CommitContext
from streams.runtime.commit.stores import reopen
from streams.state import StateManager


def undo(
    ctx: CommitContext,
    state: StateManager | None,
    exclude: Iterable[TP] = (),
    *,
    transactional: bool = False,
) -> list[TP]:
    """Forget the writes not acknowledged (their records are processed again and write
    them again), drop the store changes not committed (``transactional``: those sent
    ahead were in the aborted transaction; else written back, see the module docstring),
    rewind every partition but ``exclude`` (lost or leaving ones) to its committed offset,
    and restore the stores an interrupted restore left closed. Returns the partitions
    rewound. Blocks on the broker; raises ``BrokerUnavailable`` when it does not answer
    (undo again)."""
    ctx.sink.reset()
    if state is not None:
        state.abort(rewrite_sent=not transactional)
    rewound = ctx.partitions.rewind_to_committed(exclude)
    if state is not None:
        reopen(ctx.partitions, state, rewound)
    return rewound


def recover_at_least_once(
    ctx: CommitContext, state: StateManager | None, exclude: Iterable[TP] = ()
) -> None:
    """``recover`` (and ``rewind``) without a transaction: every queued write settled
    first, so none of them fails after the rewind (which would start a second recovery for
    the same outage) and every output refused is known; a producer left in a fatal state
    replaced; then ``undo``."""
    sink = ctx.sink
    sink.flush(ctx.timeout)
    if sink.fatal:
        sink.replace_producer(ctx.make_producer)
    undo(ctx, state, exclude)
