"""Which errors of a Kafka client clear by themselves.

``transient(err)`` says whether a client error clears when the broker answers again
(transport failure, all brokers down, a timeout, a coordinator or a partition's leader
moving, an abortable transaction error). Fencing, authorization and other fatal errors
are not transient. The lowest layer's: the record path, the runtime and the stores'
restores all ask it. ``refuses_record(err)`` says whether a write's error is the record's
own (too large, invalid, a topic it may not write): the broker would refuse that record
again, and only it. ``unanswered(client)`` says whether the cluster answers now (and if
not, what the client said): what tells a timeout worth waiting out again from an outage.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError, KafkaException

PROBE_S = 1.0
"""How long ``unanswered`` waits for the cluster's answer to one metadata request."""

_TRANSIENT = frozenset(
    {
        KafkaError._MSG_TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        # A request in flight to a node whose handle the client dropped (the node was
        # killed and left the metadata): asked again, another node answers. Seen when a
        # restore read a changelog's offsets as a node of three went down.
        KafkaError._DESTROY_BROKER,
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
        # A partition's leadership moving after a node was lost (Java's clients retry
        # each of them): a new leader whose high watermark has not caught up yet (seen
        # when a restore read a changelog's offsets as a node of three was killed), a
        # leader epoch the client or the broker has not seen yet, too few replicas in
        # sync for acks=all until the node returns.
        KafkaError.OFFSET_NOT_AVAILABLE,
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
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

RECORD_REFUSALS = frozenset(
    {
        KafkaError.MSG_SIZE_TOO_LARGE,  # over message.max.bytes (client) or the topic's
        KafkaError.RECORD_LIST_TOO_LARGE,
        KafkaError.INVALID_RECORD,  # e.g. no key on a compacted topic
        KafkaError.INVALID_MSG,  # the broker's CORRUPT_MESSAGE: a checksum, a null key
        KafkaError.INVALID_TIMESTAMP,  # outside the topic's timestamp bounds
        KafkaError.TOPIC_AUTHORIZATION_FAILED,  # a topic this producer may not write
        KafkaError.TOPIC_EXCEPTION,  # a topic name the broker refuses
    }
)
"""Write errors that belong to the record written, not to the producer or the cluster.
The broker refuses a whole batch for one such record (every record of the batch gets the
error: seen for size, validation and timestamps), so an error here names a record only
when it was written alone."""


def transient(err: KafkaError) -> bool:
    """True for errors that clear when the broker answers again."""
    code = err.code()
    if code in FENCED:
        return False
    if err.txn_requires_abort():
        return True
    return code in _TRANSIENT or (err.retriable() and not err.fatal())


PURGED = frozenset({KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT})
"""A write dropped before the broker had it: by us (a producer replaced) or by librdkafka
(a transaction failed: it purges what is queued). Undone work, done again; no refusal."""


def refuses_record(err: KafkaError) -> bool:
    """True when the broker (or the client, before sending) refused a write for what the
    record is, so writing it again would fail again (``RECORD_REFUSALS``)."""
    return err.code() in RECORD_REFUSALS and not err.fatal()


def unanswered(client: Any) -> str | None:
    """None when the cluster answers ``client``'s metadata request now (a consumer, a
    producer or an admin client; waits up to ``PROBE_S``), else what the client said."""
    try:
        client.list_topics(timeout=PROBE_S)
    except KafkaException as exc:
        error: KafkaError = exc.args[0]
        return error.str()
    return None
