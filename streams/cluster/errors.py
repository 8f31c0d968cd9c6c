"""What the door raises: each a ``ClusterError`` (so a ``StreamsError``) with a one-line
message, which the CLI prints as it is."""

from __future__ import annotations

from confluent_kafka import KafkaError

from streams.errors import StreamsError

# Errors of a cluster still settling (a new topic's leader, the group coordinator of a
# fresh cluster while __consumer_offsets is made) that librdkafka does not flag retriable:
# a request that meets one is asked again within its deadline.
MOVING = frozenset(
    (
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
    )
)


class ClusterError(StreamsError):
    """The cluster could not be reached, or refused or failed a request, within the
    timeout."""


class ClusterRefusedError(ClusterError):
    """The cluster answered and refused us: wrong credentials, a failed TLS handshake, no
    permission. Waiting does not help."""


class TopicError(ClusterError):
    """A topic could not be created, described or deleted."""


class TopicExistsError(TopicError):
    """The topic to create exists already."""


class TopicNotFoundError(TopicError):
    """A topic, or a partition of it, that the cluster does not have."""
