"""The two call shapes of a compiled topology, shared by the plan and every operator.

``Run``: one compiled node, called with each envelope that reaches it; it returns once
every node downstream has run. ``Emit``: ``emit(topic, envelope)``, an output of the plan.
"""

from __future__ import annotations

from collections.abc import Callable

from streams.envelope import Envelope

Emit = Callable[[str, Envelope], None]
"""``emit(topic, envelope)``: an output of the plan, to ``topic``."""
Run = Callable[[Envelope], None]
"""One compiled node: runs an envelope through it and everything downstream."""


def noop(_env: Envelope) -> None:
    """A ``Run`` that does nothing: an output no node reads, a record no branch takes."""
