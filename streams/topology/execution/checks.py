"""What the operators check of a record and of what a user function returned.

``key_of`` fails a record without a key to the dead-letter topic (``MissingKeyError``);
``output`` raises TypeError for a function's result that is neither an envelope nor None
(the operator fails the record with it, under the step's policy).
"""

from __future__ import annotations

from streams.envelope import Envelope
from streams.topology.policy import StepFailed, dead_letter
from streams.topology.windows import MissingKeyError


def key_of(env: Envelope, step: str, why: str) -> str:
    """``env``'s key; a record without one fails ``step`` to the dead-letter topic with a
    ``MissingKeyError`` saying ``why`` the step needs it."""
    key = env.key
    if key is None:
        raise StepFailed(step, MissingKeyError(f"{why}: the record has none"), dead_letter)
    return key


def output(out: object, step: str) -> Envelope | None:
    """What a user function of ``step`` returned, when it is an envelope or None (nothing
    to pass on); a TypeError otherwise (the caller fails the record with it)."""
    if out is not None and not isinstance(out, Envelope):
        raise TypeError(f"{step}'s function must return an Envelope or None, got {out!r}")
    return out
