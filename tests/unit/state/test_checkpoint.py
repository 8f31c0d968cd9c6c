"""The local checkpoint file: read back what was written; anything unusable means none."""

from __future__ import annotations

from pathlib import Path

from streams.state import Checkpoint
from streams.state.checkpoint_file import checkpoint_path, read_checkpoint, write_checkpoint


def test_a_checkpoint_reads_back(tmp_path: Path) -> None:
    write_checkpoint(tmp_path / "p", Checkpoint("a-s-changelog", 1234, 99))
    assert read_checkpoint(tmp_path / "p", "a-s-changelog") == Checkpoint("a-s-changelog", 1234, 99)
    write_checkpoint(tmp_path / "p", Checkpoint("a-s-changelog", 2000, None))
    assert read_checkpoint(tmp_path / "p", "a-s-changelog") == Checkpoint("a-s-changelog", 2000)


def test_missing_foreign_or_damaged_checkpoints_mean_a_full_restore(tmp_path: Path) -> None:
    assert read_checkpoint(tmp_path, "a-s-changelog") is None
    write_checkpoint(tmp_path, Checkpoint("other-changelog", 5, 1))
    assert read_checkpoint(tmp_path, "a-s-changelog") is None
    for damaged in (
        "{",
        "[]",
        '{"version": 1, "changelog_topic": "a-s-changelog"}',
        '{"version": 1, "changelog_topic": "a-s-changelog", "changelog_offset": -1}',
        '{"version": 9, "changelog_topic": "a-s-changelog", "changelog_offset": 1}',
    ):
        checkpoint_path(tmp_path).write_text(damaged)
        assert read_checkpoint(tmp_path, "a-s-changelog") is None, damaged
