"""Errors of running a topology, and which client errors are an outage.

``RuntimeFailure`` is what stops an instance (``streams run`` prints it as one line);
``DeliveryError`` is a write the broker refused; ``OutputsRefused``, outputs refused for
their records' sake (the runtime does its work again without those records).
``BrokerUnavailable`` is raised where an outage meets work that cannot finish (an output
that timed out, a transaction that cannot be committed, committed offsets that cannot be
read): the runtime catches it, waits for the broker and undoes the work since the last
commit (``streams.runtime.recovery``).

Whether a client error clears by itself is ``streams.client_errors.transient``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from streams.errors import StreamsError
from streams.state.errors import StateError


class RuntimeFailure(StreamsError):  # noqa: N818 - reads better than RuntimeFailureError
    """The runtime stopped because of an error; committed offsets cover only finished work."""


class DeliveryError(RuntimeFailure):
    """The broker refused an output (after the producer's own retries)."""


class OutputsRefused(RuntimeFailure):
    """Outputs the broker refused for their records' sake (``streams.pipeline.produce``):
    the runtime undoes the work since the last commit and does it again without those
    records, which go to the DLQ (``Committer.rewind``). ``refusals``: what was refused."""

    def __init__(self, refusals: Sequence[Any]) -> None:
        first, more = refusals[0], len(refusals) - 1
        tail = f" (and {more} more)" if more else ""
        super().__init__(f"output refused for its record's sake: {first}{tail}")
        self.refusals = tuple(refusals)


class BrokerUnavailable(RuntimeFailure):
    """The broker went away (or timed out) in the middle of a step; the runtime recovers."""


def unavailable(exc: KafkaException, doing: str) -> BrokerUnavailable:
    """The ``BrokerUnavailable`` to raise for a client error met while ``doing``."""
    err: KafkaError = exc.args[0]
    return BrokerUnavailable(f"the broker did not answer while {doing}: {err.str()}")


@contextmanager
def state_outages() -> Iterator[None]:
    """Raise a ``StateError`` the broker's absence caused (``transient``: a changelog write
    that timed out, a restore the broker did not answer) as ``BrokerUnavailable``, which
    the runtime waits out; any other as it is."""
    try:
        yield
    except StateError as exc:
        if exc.transient:
            raise BrokerUnavailable(str(exc)) from exc
        raise
