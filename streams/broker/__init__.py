"""The local Apache Kafka broker and cluster, run from the official jars (see
``LocalBroker``, one node, and ``LocalCluster``, several)."""

from streams.broker.cluster import (
    FAST_FAILOVER,
    QUICK_START_JVM,
    ClusterStatus,
    ClusterUp,
    LocalCluster,
)
from streams.broker.jars import KAFKA_VERSION, ensure_libs
from streams.broker.local import BrokerStatus, LocalBroker, UpResult
from streams.broker.node import LocalNode, NodeState, NodeStatus, free_port, free_ports
from streams.broker.readiness import metadata_ok, wait_ready

__all__ = [
    "FAST_FAILOVER",
    "KAFKA_VERSION",
    "QUICK_START_JVM",
    "BrokerStatus",
    "ClusterStatus",
    "ClusterUp",
    "LocalBroker",
    "LocalCluster",
    "LocalNode",
    "NodeState",
    "NodeStatus",
    "UpResult",
    "ensure_libs",
    "free_port",
    "free_ports",
    "metadata_ok",
    "wait_ready",
]
