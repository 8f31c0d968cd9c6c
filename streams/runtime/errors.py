"""Errors the runtime raises to its caller (``streams run`` turns them into one line).

``RuntimeFailure``, ``DeliveryError`` and ``BrokerUnavailable`` are the record path's
(``streams.pipeline.errors``); these are the runtime's own."""

from __future__ import annotations

from streams.pipeline.errors import RuntimeFailure


class MissingTopicError(RuntimeFailure):
    """A topic the topology reads does not exist."""


class CoPartitionError(RuntimeFailure):
    """A join's stream and table topics do not have as many partitions."""
