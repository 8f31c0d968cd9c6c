"""Property: at-least-once with crashes converges to the state of the committed input.

A stream of intervals; each ends in a commit (flush, acks, commit, apply) or in a crash
after the changelog write but before the commit. A crash restarts from the committed
offset: the store is rebuilt from the changelog (records tagged past the commit skipped)
and the same input is processed again. Right after each crash the restored store equals a
plain dict fed only the committed input; and so do the store and a restore of the whole
changelog at the end.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.state import Checkpoint, Entry, MemoryBackend
from streams.state.restore import ChangelogReplay
from streams.state.store import ChangelogStore
from streams.state.testing import RecordingProducer

TOPIC = "app-s-changelog"

ops = st.lists(
    st.tuples(st.sampled_from("abcdefgh"), st.one_of(st.none(), st.binary(max_size=3))),
    max_size=8,
)
intervals = st.lists(st.tuples(ops, st.booleans()), min_size=1, max_size=12)


def restore(producer: RecordingProducer, committed: int) -> dict[bytes, Entry]:
    """What a restore (the library's replay) makes of the whole changelog."""
    storage = MemoryBackend().open(Path("replica"))
    replay = ChangelogReplay(
        storage, topic=TOPIC, partition=0, start_offset=0, committed_offset=committed
    )
    replay.apply(producer.messages(TOPIC, 0))
    return dict(storage.items())


@settings(max_examples=150, deadline=None)
@given(intervals)
def test_crashes_between_changelog_write_and_commit_converge(
    stream: list[tuple[list[tuple[str, bytes | None]], bool]],
) -> None:
    store = ChangelogStore("app", "s", MemoryBackend(), consumer_config={}, source_topic="in")
    producer = RecordingProducer()
    part = store.attach(0)
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
                part = store.attach(0)
                restored = restore(producer, committed)
                assert restored == model  # nothing of the uncommitted interval is back
                part.storage.write(dict(restored))
                part.checkpoint = Checkpoint(TOPIC, 0, committed)
                continue
            part.apply()
            committed = offset_after
        for key, value in batch:
            if value is None:
                model.pop(key.encode(), None)
            else:
                model[key.encode()] = Entry(value)
    assert dict(part.storage.items()) == model
    assert restore(producer, committed) == model
