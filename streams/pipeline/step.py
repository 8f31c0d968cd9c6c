"""The step contract: what every link of the record path implements.

The chain is assembled once (``streams.pipeline.chain``); each step holds the next and
knows nothing else of the chain. All calls happen on the runtime's one thread:

- ``submit(record)``: take one record, in offset order per partition. A step either hands
  the record on (``next.submit``), possibly more than once (a record released from a
  waiting room travels under the entry of the record that released it), or drops it; a
  step that drops a record after ``Track`` releases its entry (``record.entry.release()``)
  so its offset can commit. May raise what the step's contract says (``ProcessingError``
  from a failure policy that says stop; ``BrokerUnavailable`` and ``DeliveryError`` from
  produce).
- ``poll()``: once per loop turn, after the turn's records: serve what is ready
  (acknowledgements, due retries, a due commit). Never blocks for long.
- ``revoked(partitions)``: the partitions left this instance (revoked or lost): forget
  whatever the step keeps for them. Stores and offsets are the committer's business.
- ``join(timeout)``: finish the work in hand (flush outputs), waiting up to ``timeout``.
- ``close()``: release what the step holds (processors' ``close``).

``Forward`` implements the last four by passing them on, so a step overrides only what it
does. Arroyo's processing strategies are the model (``arroyo.processing.strategies``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from streams.coordinates import TP
from streams.pipeline.record import Record


class Step(Protocol):
    def submit(self, record: Record) -> None: ...
    def poll(self) -> None: ...
    def revoked(self, partitions: Sequence[TP]) -> None: ...
    def join(self, timeout: float) -> None: ...
    def close(self) -> None: ...


class Forward:
    """A step that passes ``poll``, ``revoked``, ``join`` and ``close`` on to ``next``."""

    __slots__ = ("next",)

    def __init__(self, next: Step) -> None:
        self.next = next

    def submit(self, record: Record) -> None:
        self.next.submit(record)

    def poll(self) -> None:
        self.next.poll()

    def revoked(self, partitions: Sequence[TP]) -> None:
        self.next.revoked(partitions)

    def join(self, timeout: float) -> None:
        self.next.join(timeout)

    def close(self) -> None:
        self.next.close()
