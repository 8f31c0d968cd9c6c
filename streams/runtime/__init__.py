"""The native runtime: runs a ``Topology`` on Kafka with confluent-kafka.

``Runtime(topology, RuntimeConfig(bootstrap=...)).run()`` blocks until ``stop()``; see
``streams.runtime.runner`` for the delivery and ordering contract. ``run_instance`` adds
what ``streams run`` needs: owned topics created, signal handling and a status line.
"""

from streams.runtime.checkpoint import ProducerFencedError, TransactionError
from streams.runtime.config import RuntimeConfig
from streams.runtime.errors import DeliveryError, MissingTopicError, RecordFailed, RuntimeFailure
from streams.runtime.offsets import InFlight, PartitionOffsets
from streams.runtime.runner import Runtime
from streams.runtime.sink import OutputSink
from streams.runtime.status import Stats, StatusReporter

__all__ = [
    "DeliveryError",
    "InFlight",
    "MissingTopicError",
    "OutputSink",
    "PartitionOffsets",
    "ProducerFencedError",
    "RecordFailed",
    "Runtime",
    "RuntimeConfig",
    "RuntimeFailure",
    "Stats",
    "StatusReporter",
    "TransactionError",
]
