"""Streams: event streaming on Apache Kafka.

The public API is re-exported here; everything else is private by default.
"""

from streams.codec import AvroCodec, Codec, CodecError, DecodeError, EncodeError, Upcasters
from streams.envelope import Envelope
from streams.failures import RetryPolicy, Verdict
from streams.logs import configure_logging
from streams.replay import (
    ReplayError,
    ReplayPlan,
    ResetPlan,
    execute_reset,
    group_offsets,
    plan_replay,
    plan_reset,
)
from streams.runtime import Runtime, RuntimeConfig
from streams.schemas import CompatibilityMode, SchemaCatalog, default_catalog
from streams.state import ChangelogStore, Dedup, MemoryBackend, RocksDBBackend
from streams.topology import (
    ErrorAction,
    ProcessorContext,
    Topology,
    TopologyBuilder,
    load_topology,
    owned,
)

__all__ = [
    "AvroCodec",
    "ChangelogStore",
    "Codec",
    "CodecError",
    "CompatibilityMode",
    "DecodeError",
    "Dedup",
    "EncodeError",
    "Envelope",
    "ErrorAction",
    "MemoryBackend",
    "ProcessorContext",
    "ReplayError",
    "ReplayPlan",
    "ResetPlan",
    "RetryPolicy",
    "RocksDBBackend",
    "Runtime",
    "RuntimeConfig",
    "SchemaCatalog",
    "Topology",
    "TopologyBuilder",
    "Upcasters",
    "Verdict",
    "configure_logging",
    "default_catalog",
    "execute_reset",
    "group_offsets",
    "load_topology",
    "owned",
    "plan_replay",
    "plan_reset",
]
__version__ = "0.1.0"
