"""Which records a replay copies: by envelope type, key, or header, read without decoding.

The envelope type travels in the CloudEvents Kafka header ``ce_type``, so a filter never
touches the record's value. Values of one kind are alternatives (any ``--type`` matches);
kinds combine (a type *and* a key *and* every header must match).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from streams.replay.errors import ReplayError

TYPE_HEADER = "ce_type"
Headers = Sequence[tuple[str, bytes | None]] | None


@dataclass(frozen=True, slots=True)
class RecordFilter:
    """Keeps records whose ``ce_type`` is one of ``types``, whose key is one of ``keys``,
    and that carry every ``headers`` pair (each empty set means "any")."""

    types: frozenset[bytes] = frozenset()
    keys: frozenset[bytes] = frozenset()
    headers: tuple[tuple[str, bytes], ...] = ()

    @classmethod
    def of(
        cls,
        types: Iterable[str] = (),
        keys: Iterable[str] = (),
        headers: Iterable[str] = (),
    ) -> RecordFilter:
        """From CLI text: types and keys as given, headers as ``name=value``."""
        pairs = []
        for item in headers:
            name, sep, value = item.partition("=")
            if not sep or not name:
                raise ReplayError(f"--header expects NAME=VALUE, got {item!r}")
            pairs.append((name, value.encode()))
        return cls(
            frozenset(t.encode() for t in types),
            frozenset(k.encode() for k in keys),
            tuple(pairs),
        )

    @property
    def everything(self) -> bool:
        return not (self.types or self.keys or self.headers)

    def matches(self, key: bytes | None, headers: Headers) -> bool:
        if self.keys and key not in self.keys:
            return False
        if self.types and not any(n == TYPE_HEADER and v in self.types for n, v in headers or ()):
            return False
        return all((name, value) in (headers or ()) for name, value in self.headers)

    def __str__(self) -> str:
        parts = [f"type={t.decode()}" for t in sorted(self.types)]
        parts += [f"key={k.decode(errors='replace')}" for k in sorted(self.keys)]
        parts += [f"header {n}={v.decode(errors='replace')}" for n, v in self.headers]
        return ", ".join(parts) or "none"
