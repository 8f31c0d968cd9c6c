"""Tables of records whose identifying columns are never cut.

A row's topic name, partition or offset is what a user copies into the next command;
rich, short of room, ends a long cell with "…", which would hide it. ``Records`` folds
such a column's long values onto more lines instead, and below ``NARROW`` columns (a
split terminal) prints one line per record, ``name=value`` pairs, which a terminal wraps
whole. Every command that prints rows uses it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

if TYPE_CHECKING:
    from rich.table import Table

NARROW = 100  # columns below which a table becomes one line per record


class Records:
    """Rows under named columns; ``ids`` are those that tell rows apart, ``right`` those
    right-aligned (numbers). A rich renderable: ``console.print(records)``."""

    def __init__(
        self,
        *columns: str,
        ids: Iterable[str],
        right: Iterable[str] = (),
        title: str | None = None,
        caption: str | None = None,
    ) -> None:
        self.columns = columns
        self.ids = frozenset(ids)
        self.right = frozenset(right)
        self.title = title
        self.caption = caption
        self.rows: list[tuple[tuple[str, ...], str | None]] = []

    def add_row(self, *cells: str, style: str | None = None) -> None:
        self.rows.append((cells, style))

    def table(self) -> Table:
        """The rich table, its identifying columns folded, never cut."""
        from rich.table import Table  # on use: `streams --help` does not load it

        table = Table(title=self.title, caption=self.caption)
        for i, name in enumerate(self.columns):
            ident = name in self.ids
            longest = max((len(cells[i]) for cells, _ in self.rows), default=0)
            table.add_column(
                name,
                justify="right" if name in self.right else "left",
                overflow="fold" if ident else "ellipsis",
                min_width=min(max(len(name), longest), 40) if ident else None,
            )
        for cells, style in self.rows:
            table.add_row(*cells, style=style)
        return table

    def lines(self) -> Iterator[Text]:
        """One line per record, the identifying columns first."""
        if self.title:
            yield Text(self.title, style="bold")
        order = sorted(range(len(self.columns)), key=lambda i: self.columns[i] not in self.ids)
        for cells, style in self.rows:
            yield Text("  ".join(f"{self.columns[i]}={cells[i]}" for i in order), style=style or "")
        if self.caption:
            yield Text(self.caption, style="dim")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if options.max_width >= NARROW:
            yield self.table()
        else:
            yield from self.lines()
