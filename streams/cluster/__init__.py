"""The one door to a cluster's metadata and admin API: clients, topics, their sizes.

Everything Streams creates on a cluster is created here, so one rule holds for all of it:
a topic takes the cluster's ``default.replication.factor`` unless the caller asks for a
count (``replication_factor`` -1, as Kafka Streams' ``replication.factor``). Partition
counts are read here too, with one error for a topic that is not there (``TopicNotFoundError``).
The lowest layer: the stores, the failure routing, the runtime and the tools all come
through it; nothing else builds an admin client.
"""

from streams.cluster.clients import admin_client
from streams.cluster.topics import (
    DEFAULT_REPLICATION,
    TopicError,
    TopicExistsError,
    TopicNotFoundError,
    Topics,
    create_topic,
    default_replication_factor,
    delete_app_topics,
    delete_topics,
    partition_count,
)

__all__ = [
    "DEFAULT_REPLICATION",
    "TopicError",
    "TopicExistsError",
    "TopicNotFoundError",
    "Topics",
    "admin_client",
    "create_topic",
    "default_replication_factor",
    "delete_app_topics",
    "delete_topics",
    "partition_count",
]
