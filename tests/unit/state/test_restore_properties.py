"""Property: at-least-once with crashes converges to the state of the committed input.

A stream of intervals; each ends in a commit (flush, acks, commit, apply) or in a crash
after the changelog write but before the commit. A crash restarts from the committed
offset: the store is rebuilt from the changelog (records tagged past the commit skipped)
and the same input is processed again. Right after each crash the restored store equals a
plain dict fed only the committed input; and so do the store and a restore of the whole
changelog at the end.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.state import Entry, MemoryBackend
from streams.state.store import ChangelogStore
from streams.testing.memory import MemoryCluster

TOPIC = "app-s-changelog"

ops = st.lists(
    st.tuples(st.sampled_from("abcdefgh"), st.one_of(st.none(), st.binary(max_size=3))),
    max_size=8,
)
intervals = st.lists(st.tuples(ops, st.booleans()), min_size=1, max_size=12)


def store_on(cluster: MemoryCluster) -> ChangelogStore:
    """A store whose restores read ``cluster``'s changelog."""
    return ChangelogStore(
        "app",
        "s",
        MemoryBackend(),
        consumer_config={},
        make_consumer=cluster.consumer,
        source_topic="in",
    )


def restore(cluster: MemoryCluster, committed: int) -> dict[bytes, Entry]:
    """What a restore makes of the whole changelog: a new store opened at ``committed``."""
    return dict(store_on(cluster).open(0, committed).storage.items())


@settings(max_examples=150, deadline=None)
@given(intervals)
def test_crashes_between_changelog_write_and_commit_converge(
    stream: list[tuple[list[tuple[str, bytes | None]], bool]],
) -> None:
    cluster = MemoryCluster()
    cluster.create_topic(TOPIC, 1)
    producer = cluster.producer({})
    store = store_on(cluster)
    part = store.open(0, 0)
    model: dict[bytes, Entry] = {}
    committed = 0
    for batch, crash in stream:
        offset_after = committed + len(batch) + 1
        for attempt in ("crash", "commit") if crash else ("commit",):
            tx = part.transaction()
            for key, value in batch:
                if value is None:
                    tx.delete(key)
                else:
                    tx.set(key, value)
            part.flush(producer, source_offset=offset_after)
            producer.flush()
            part.check_delivered()
            if attempt == "crash":
                # The process dies before committing: a new instance restores and redoes it.
                part.abort()
                store.close(0, keep=False)
                part = store.open(0, committed)  # restored from the changelog
                assert dict(part.storage.items()) == model  # nothing uncommitted is back
                continue
            part.apply()
            committed = offset_after
        for key, value in batch:
            if value is None:
                model.pop(key.encode(), None)
            else:
                model[key.encode()] = Entry(value)
    assert dict(part.storage.items()) == model
    assert restore(cluster, committed) == model
