"""The crash guard's bookkeeping, run by run: what a run that died leaves behind, and when
a record is condemned (``streams.pipeline.crash_guard``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from streams.pipeline import crash_guard
from streams.pipeline.crash_guard import REACH_STEP, CrashGuard


def run(
    directory: Path,
    offsets: list[int],
    *,
    dies: bool,
    commits: dict[int, int] | None = None,
) -> int | None:
    """One run on partition t[0]: records at ``offsets`` taken in turn (the process dies
    in the last one when ``dies``); ``commits``: after the record at a key, a commit of
    its value. Returns the offset condemned at its start, if any."""
    guard = CrashGuard(directory, limit=3)
    part = guard.partition("t", 0)
    condemned = None
    for n, offset in enumerate(offsets):
        part.before(offset)
        if n == 0:
            condemned = part.condemned
        if commits and offset in commits:
            part.committed(commits[offset])
    if not dies:
        guard.close()
    return condemned


def written(directory: Path) -> dict[str, int | None]:
    data: dict[str, int | None] = json.loads((directory / "t-0").read_text())
    return data


def test_a_record_in_hand_at_three_deaths_in_a_row_is_condemned_at_the_fourth_start(
    tmp_path: Path,
) -> None:
    assert run(tmp_path, [10, 11, 12], dies=True) is None  # first death: the record unknown
    assert run(tmp_path, [10, 11, 12], dies=True) is None  # careful now: 12 in hand
    assert run(tmp_path, [10, 11, 12], dies=True) is None
    assert run(tmp_path, [10, 11, 12], dies=False) == 12


def test_a_clean_stop_forgets_the_deaths(tmp_path: Path) -> None:
    run(tmp_path, [10, 11, 12], dies=True)
    run(tmp_path, [10, 11, 12], dies=True)
    run(tmp_path, [10, 11, 12], dies=False)  # a clean stop in between: not in a row
    assert not (tmp_path / "t-0").exists()
    run(tmp_path, [10, 11, 12], dies=True)
    run(tmp_path, [10, 11, 12], dies=True)
    assert run(tmp_path, [10, 11, 12], dies=False) is None  # two deaths since: not three


def test_deaths_with_another_record_in_hand_are_not_counted_for_it(tmp_path: Path) -> None:
    run(tmp_path, [10, 11, 12], dies=True)
    run(tmp_path, [10, 11, 12], dies=True)  # 12 in hand
    run(tmp_path, [10, 11], dies=True)  # 11 in hand this time
    assert run(tmp_path, [10, 11, 12], dies=False) is None


def test_a_run_whose_last_run_ended_well_writes_only_how_far_it_may_get(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes: list[int] = []
    pwrite = os.pwrite

    def counted(fd: int, data: bytes, offset: int) -> int:
        writes.append(offset)
        return pwrite(fd, data, offset)

    monkeypatch.setattr(crash_guard.os, "pwrite", counted)
    guard = CrashGuard(tmp_path, limit=3)
    part = guard.partition("t", 0)
    assert not part.serial
    part.before(10)
    assert written(tmp_path) == {"suspect": None, "deaths": 0, "reached": 10 + REACH_STEP}
    for offset in range(11, 10 + REACH_STEP):
        part.before(offset)
    assert len(writes) == 1  # no write per record
    part.before(10 + REACH_STEP)
    assert len(writes) == 2 and written(tmp_path)["reached"] == 10 + 2 * REACH_STEP
    guard.close()
    assert not (tmp_path / "t-0").exists()


def test_progress_before_the_suspect_does_not_reset_its_count(tmp_path: Path) -> None:
    run(tmp_path, [10, 11, 12], dies=True)
    run(tmp_path, [10, 11, 12], dies=True)  # 12 in hand: its second death
    # The third run commits past its start, not past 12, and dies with 12 in hand again.
    run(tmp_path, [10, 11, 12], dies=True, commits={10: 11, 11: 12})
    assert run(tmp_path, [12], dies=False) == 12


def test_a_commit_before_the_record_the_last_run_may_have_reached_keeps_watching(
    tmp_path: Path,
) -> None:
    # The first death's record is unknown, but not past where that run got (``reached``):
    # a commit past the second run's start and before that record keeps the watch on it.
    run(tmp_path, [*range(10, 500)], dies=True)
    run(tmp_path, [*range(10, 500)], dies=True, commits={100: 101, 300: 301})
    assert written(tmp_path)["suspect"] == 499
    run(tmp_path, [*range(301, 500)], dies=True, commits={400: 401})
    assert run(tmp_path, [401, 499], dies=False) == 499


def test_a_careful_run_stops_writing_per_record_once_a_commit_passes_the_suspect(
    tmp_path: Path,
) -> None:
    run(tmp_path, [10, 11], dies=True)
    run(tmp_path, [10, 11], dies=True)  # 11 in hand
    guard = CrashGuard(tmp_path, limit=3)
    part = guard.partition("t", 0)
    assert part.serial  # the last run died: one record at a time
    part.before(10)
    part.committed(11)
    assert not part.serial  # committed past the start: back to its concurrency
    part.before(11)
    assert written(tmp_path)["suspect"] == 11  # still watched: 11 was in hand at the deaths
    part.committed(12)
    assert written(tmp_path) == {"suspect": None, "deaths": 0, "reached": 10 + REACH_STEP}
    part.before(12)
    part.before(13)
    assert written(tmp_path)["suspect"] is None  # no more writes per record


def test_after_a_condemned_record_is_committed_past_the_partition_is_not_watched(
    tmp_path: Path,
) -> None:
    for _ in range(3):
        run(tmp_path, [10, 11, 12], dies=True)
    guard = CrashGuard(tmp_path, limit=3)
    part = guard.partition("t", 0)
    part.before(10)
    assert part.condemned == 12
    part.committed(11)  # past the start, not past the condemned
    part.before(11)
    part.before(12)
    assert part.condemned == 12
    part.committed(13)
    assert part.condemned is None
    part.before(13)
    assert written(tmp_path)["suspect"] is None
