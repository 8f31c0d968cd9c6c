"""Topologies: a description of stream processing, separate from running it.

Build one with ``TopologyBuilder``; run it with ``streams run`` (``streams.runtime``) or
test it without a broker with ``streams.testing.TestDriver``.
"""

from streams.topology.async_steps import CallContext
from streams.topology.builder import Stream, TopologyBuilder
from streams.topology.context import ProcessorContext, RecordMeta
from streams.topology.errors import TopologyError, TopologyLoadError, TopologyValidationError
from streams.topology.loader import load_topology
from streams.topology.names import Owned, owned
from streams.topology.plan import Plan, SinkTypeError
from streams.topology.policy import ErrorAction, ErrorPolicy, ProcessingError, ProcessingFailure
from streams.topology.tables import Aggregations, Table
from streams.topology.topology import OwnedTopic, Topology
from streams.topology.windows import (
    LateRecordError,
    MissingKeyError,
    Sessions,
    Sliding,
    Update,
    Window,
    Windows,
    hopping,
    session,
    sliding,
    tumbling,
)

__all__ = [
    "Aggregations",
    "CallContext",
    "ErrorAction",
    "ErrorPolicy",
    "LateRecordError",
    "MissingKeyError",
    "Owned",
    "OwnedTopic",
    "Plan",
    "ProcessingError",
    "ProcessingFailure",
    "ProcessorContext",
    "RecordMeta",
    "Sessions",
    "SinkTypeError",
    "Sliding",
    "Stream",
    "Table",
    "Topology",
    "TopologyBuilder",
    "TopologyError",
    "TopologyLoadError",
    "TopologyValidationError",
    "Update",
    "Window",
    "Windows",
    "hopping",
    "load_topology",
    "owned",
    "session",
    "sliding",
    "tumbling",
]
