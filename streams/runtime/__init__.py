"""The native runtime: runs a ``Topology`` on Kafka with confluent-kafka.

``Runtime(topology, RuntimeConfig(bootstrap=...)).run()`` blocks until ``stop()``; see
``streams.runtime.runner`` for the delivery and ordering contract, ``streams.pipeline``
for the chain of steps every record goes through, and ``streams.runtime.commit`` for what
a commit makes durable. ``run_instance`` adds what ``streams run`` needs: owned topics
created, signal handling and a status line.
"""

from streams.pipeline.errors import BrokerUnavailable, DeliveryError, RuntimeFailure
from streams.pipeline.stats import Stats
from streams.runtime.clients import Clients, KafkaClients
from streams.runtime.commit import ProducerFencedError, TransactionError
from streams.runtime.config import RuntimeConfig
from streams.runtime.errors import CoPartitionError, MissingTopicError
from streams.runtime.runner import Runtime
from streams.runtime.status import StatusReporter

__all__ = [
    "BrokerUnavailable",
    "Clients",
    "CoPartitionError",
    "DeliveryError",
    "KafkaClients",
    "MissingTopicError",
    "ProducerFencedError",
    "Runtime",
    "RuntimeConfig",
    "RuntimeFailure",
    "Stats",
    "StatusReporter",
    "TransactionError",
]
