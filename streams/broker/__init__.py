"""The local Apache Kafka broker, run from the official jars (see ``LocalBroker``)."""

from streams.broker.jars import KAFKA_VERSION, ensure_libs
from streams.broker.local import BrokerStatus, LocalBroker, UpResult, free_port
from streams.broker.readiness import metadata_ok, wait_ready

__all__ = [
    "KAFKA_VERSION",
    "BrokerStatus",
    "LocalBroker",
    "UpResult",
    "ensure_libs",
    "free_port",
    "metadata_ok",
    "wait_ready",
]
