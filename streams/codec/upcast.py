"""Upcasters: Python functions for version steps Avro resolution cannot express.

An upcaster for ``(type, n)`` takes a payload dict valid for version ``n`` and returns one
valid for ``n + 1`` (a rename, a split field, a computed value). The codec uses it when a
reader asks for a version above ``n`` and the record was written at ``n`` or below.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]


class Upcasters(Mapping[tuple[str, int], Upcaster]):
    """A registry of upcasters by ``(type, from_version)``.

    ``@upcasters.register("order.placed", 2)`` registers a function taking v2 data to v3.
    """

    def __init__(self, functions: Mapping[tuple[str, int], Upcaster] | None = None) -> None:
        self._functions: dict[tuple[str, int], Upcaster] = dict(functions or {})

    def register(self, type_: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
        def decorator(fn: Upcaster) -> Upcaster:
            self._functions[(type_, from_version)] = fn
            return fn

        return decorator

    def steps(self, type_: str, low: int, high: int) -> list[int]:
        """The from-versions in ``[low, high)`` that have an upcaster, ascending."""
        return sorted(v for (t, v) in self._functions if t == type_ and low <= v < high)

    def __getitem__(self, key: tuple[str, int]) -> Upcaster:
        return self._functions[key]

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return iter(self._functions)

    def __len__(self) -> int:
        return len(self._functions)
