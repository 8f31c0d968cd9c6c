"""A table never cuts what tells its rows apart: topic names, partitions, offsets."""

from __future__ import annotations

import io

from rich.console import Console

from streams.cli._tables import Records

LONG = "shop-orders-enriched-by-customer-region-repartition-retry-1"


def _rendered(width: int) -> str:
    table = Records("topic", "partition", "lag", ids=["topic", "partition"], right=["lag"])
    table.add_row(LONG, "11", "1,234")
    table.add_row(LONG.replace("retry-1", "retry-2"), "3", "0")
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(table)
    return out.getvalue()


def _joined(text: str) -> str:
    """The text with every line break and table border gone: what a folded cell spells."""
    return "".join(ch for ch in text if ch not in "\n│┃ ")


def test_a_wide_terminal_shows_a_table_with_the_names_whole() -> None:
    shown = _rendered(200)
    assert "┃ topic" in shown  # a table
    assert LONG in shown and LONG.replace("retry-1", "retry-2") in shown
    assert "…" not in shown


def test_a_narrow_terminal_shows_one_line_per_record_names_first() -> None:
    shown = _rendered(60)
    assert "┃" not in shown and "…" not in shown
    assert _joined(shown).startswith(f"topic={LONG}partition=11lag=1,234")
    assert f"topic={LONG.replace('retry-1', 'retry-2')}partition=3" in _joined(shown)


def test_between_the_two_a_long_name_folds_and_is_never_cut() -> None:
    table = Records("topic", "data", ids=["topic"])
    table.add_row(LONG, "x" * 300)
    out = io.StringIO()
    Console(file=out, width=120, color_system=None).print(table)
    first_column = [line.split("│")[1].strip() for line in out.getvalue().splitlines()
                    if line.startswith("│")]  # fmt: skip
    assert "".join(first_column) == LONG  # whole, perhaps over two lines
