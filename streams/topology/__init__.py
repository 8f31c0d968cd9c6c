"""Topologies: a description of stream processing, separate from running it.

Build one with ``TopologyBuilder``; run it with ``streams run`` (``streams.runtime``) or
test it without a broker with ``streams.testing.TestDriver``.

The description, plain data that runs nothing:

- ``builder``: ``TopologyBuilder`` and the fluent ``Stream``; ``tables``: the DSL of tables,
  aggregations and joins (``Table``, ``Aggregations``), and their co-partitioning checks.
- ``topology``: the built ``Topology``; ``nodes``: its sources, steps and sinks;
  ``specs``: what its stateful steps keep (aggregations, tables, joins); ``stores``: its
  declared stores; ``windows``: windows, grace and ``Update``; ``values``: the types of
  table values.
- ``validation``: what ``build()`` refuses; ``describe``: a topology as text, data or a
  Mermaid graph; ``loader``: a topology from a Python file.
- ``policy``: error policies; ``names``: topic names; ``failure_topics``: its retry and
  dead-letter topics; ``partitioning``: Kafka's key-to-partition hash; ``reply``: the
  headers of request-reply; ``errors``: what building and loading raise.

The execution, ``streams.topology.execution``: the ``Plan`` a topology compiles into and
one module per operator; it imports the description, never the reverse.
"""

from streams.topology.builder import Stream, TopologyBuilder
from streams.topology.errors import TopologyError, TopologyLoadError, TopologyValidationError
from streams.topology.execution.async_steps import CallContext
from streams.topology.execution.context import ProcessorContext, RecordMeta
from streams.topology.execution.plan import Plan, SinkTypeError
from streams.topology.loader import load_topology
from streams.topology.names import Owned, owned
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
