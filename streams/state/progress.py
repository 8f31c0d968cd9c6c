"""Restore progress on a terminal: one rich progress bar per restoring store partition.

``with RestoreProgressBar() as progress: ChangelogStore(..., progress=progress)``. The bar
shows changelog offsets done of the total to restore; on a non-terminal it stays silent
(the restore's own log lines carry the same facts).
"""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)


class RestoreProgressBar:
    """A :data:`streams.state.restore.RestoreProgress` callback drawing rich bars."""

    def __init__(self, console: Console | None = None) -> None:
        self._progress = Progress(
            TextColumn("restoring {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=console is not None and not console.is_terminal,
        )
        self._tasks: dict[tuple[str, int], TaskID] = {}

    def __call__(self, topic: str, partition: int, done: int, total: int) -> None:
        key = (topic, partition)
        task = self._tasks.get(key)
        if task is None:
            task = self._progress.add_task(f"{topic}[{partition}]", total=max(total, 1))
            self._tasks[key] = task
        self._progress.update(task, completed=done if total else 1)

    def __enter__(self) -> RestoreProgressBar:
        self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._progress.stop()
