"""``make bench``: figures taken side by side in one run on the same broker.

Every section is a module with ``run(ctx: BenchContext) -> list[Row]`` registered in
``SECTIONS`` (``streams.bench.__main__``). Rows with a ``baseline`` print a ratio.
"""

from streams.bench.core import BenchContext, Row

__all__ = ["BenchContext", "Row"]
