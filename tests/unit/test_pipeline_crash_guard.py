"""The crash guard's bookkeeping, run by run: what a run that died leaves behind, and when
a record is condemned (``streams.pipeline.crash_guard``)."""

from __future__ import annotations

from pathlib import Path

from streams.pipeline.crash_guard import CrashGuard


def run(
    directory: Path, offsets: list[int], *, dies: bool, committed: int | None = None
) -> int | None:
    """One run on partition t[0]: records at ``offsets`` taken in turn (the process dies
    in the last one when ``dies``); returns the offset condemned at its start, if any."""
    guard = CrashGuard(directory, limit=3)
    part = guard.partition("t", 0)
    condemned = None
    for offset in offsets:
        if not part.before(offset, committed):
            break
        condemned = part.condemned
    if not dies:
        guard.close()
    return condemned


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


def test_a_partition_whose_last_run_ended_well_is_not_watched_per_record(tmp_path: Path) -> None:
    guard = CrashGuard(tmp_path, limit=3)
    part = guard.partition("t", 0)
    assert part.before(10, None) is False  # nothing to watch: the caller drops the guard
    guard.close()
    assert not (tmp_path / "t-0").exists()


def test_a_careful_run_stops_watching_once_it_commits_past_its_start(tmp_path: Path) -> None:
    run(tmp_path, [10, 11], dies=True)
    guard = CrashGuard(tmp_path, limit=3)
    part = guard.partition("t", 0)
    assert part.before(10, 10) is True  # careful: the last run died
    assert part.before(11, 11) is False  # committed past 10: no loop here


def test_after_a_condemned_record_is_committed_past_the_partition_is_not_watched(
    tmp_path: Path,
) -> None:
    for _ in range(3):
        run(tmp_path, [10, 11, 12], dies=True)
    guard = CrashGuard(tmp_path, limit=3)
    part = guard.partition("t", 0)
    assert part.before(10, None) is True and part.condemned == 12
    assert part.before(11, 11) is True  # committed past the start, not past the condemned
    assert part.before(12, 12) is True
    assert part.before(13, 13) is False  # past 12: no more writes per record
