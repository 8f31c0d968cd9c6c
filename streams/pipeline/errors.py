"""Errors of running a topology, and which client errors are an outage.

``RuntimeFailure`` is what stops an instance (``streams run`` prints it as one line);
``DeliveryError`` is a write the broker refused. ``BrokerUnavailable`` is raised where an
outage meets work that cannot finish (an output that timed out, a transaction that cannot
be committed, committed offsets that cannot be read): the runtime catches it, waits for the
broker and undoes the work since the last commit (``streams.runtime.recovery``).

``transient(err)`` says whether a client error clears when the broker answers again
(transport failure, all brokers down, a timeout, a coordinator moving, an abortable
transaction error). Fencing, authorization and other fatal errors are not transient.
"""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from streams.errors import StreamsError


class RuntimeFailure(StreamsError):  # noqa: N818 - reads better than RuntimeFailureError
    """The runtime stopped because of an error; committed offsets cover only finished work."""


class DeliveryError(RuntimeFailure):
    """The broker refused an output (after the producer's own retries)."""


class BrokerUnavailable(RuntimeFailure):
    """The broker went away (or timed out) in the middle of a step; the runtime recovers."""


_TRANSIENT = frozenset(
    {
        KafkaError._MSG_TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._TIMED_OUT,
        KafkaError._TIMED_OUT_QUEUE,
        KafkaError._WAIT_COORD,
        KafkaError._RESOLVE,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.NETWORK_EXCEPTION,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.CONCURRENT_TRANSACTIONS,
    }
)
FENCED = frozenset(
    {
        KafkaError._FENCED,
        getattr(KafkaError, "PRODUCER_FENCED", -1),
        KafkaError.INVALID_PRODUCER_EPOCH,
    }
)
"""Another producer with the same ``transactional.id`` took over: never transient."""


def transient(err: KafkaError) -> bool:
    """True for errors that clear when the broker answers again (see the module doc)."""
    code = err.code()
    if code in FENCED:
        return False
    if err.txn_requires_abort():
        return True
    return code in _TRANSIENT or (err.retriable() and not err.fatal())


def unavailable(exc: KafkaException, doing: str) -> BrokerUnavailable:
    """The ``BrokerUnavailable`` to raise for a client error met while ``doing``."""
    err: KafkaError = exc.args[0]
    return BrokerUnavailable(f"the broker did not answer while {doing}: {err.str()}")
