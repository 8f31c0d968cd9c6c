"""The one door to a cluster's metadata and admin API: clients, topics, offsets, groups.

Everything Streams creates on a cluster is created here, so one rule holds for all of it:
a topic takes the cluster's ``default.replication.factor`` unless the caller asks for a
count (``replication_factor`` -1, as Kafka Streams' ``replication.factor``). Partition
counts are read here too, by one lookup with one error for a topic that is not there
(``TopicNotFoundError``). Every error is a ``ClusterError`` with a one-line message.

Two holders: ``Topics`` is what a running app holds (its admin client, its replication
factor); ``Cluster`` is what a command or tool holds (a deadline, retries, the reason a
broker refused us, offsets and groups). The lowest layer: the stores, the failure
routing, the runtime and the tools all come through it; nothing else builds an admin
client or sends it a request (``tests/unit/cluster/test_door.py``).
"""

from streams.cluster.clients import admin_client, probe_metadata
from streams.cluster.connection import Cluster, default_bootstrap
from streams.cluster.errors import (
    ClusterError,
    ClusterRefusedError,
    TopicError,
    TopicExistsError,
    TopicNotFoundError,
)
from streams.cluster.groups import GroupInfo, Member, set_share_offset_reset
from streams.cluster.offsets import OffsetKind
from streams.cluster.topics import (
    DEFAULT_REPLICATION,
    Topics,
    create_topic,
    default_replication_factor,
    delete_app_topics,
    delete_topics,
    partition_count,
    topic_configs,
    topic_metadata,
)
from streams.config import DEFAULT_BOOTSTRAP, DEFAULT_TIMEOUT

__all__ = [
    "DEFAULT_BOOTSTRAP",
    "DEFAULT_REPLICATION",
    "DEFAULT_TIMEOUT",
    "Cluster",
    "ClusterError",
    "ClusterRefusedError",
    "GroupInfo",
    "Member",
    "OffsetKind",
    "TopicError",
    "TopicExistsError",
    "TopicNotFoundError",
    "Topics",
    "admin_client",
    "create_topic",
    "default_bootstrap",
    "default_replication_factor",
    "delete_app_topics",
    "delete_topics",
    "partition_count",
    "probe_metadata",
    "set_share_offset_reset",
    "topic_configs",
    "topic_metadata",
]
