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
from streams.schemas import CompatibilityMode, SchemaCatalog, default_catalog
from streams.state import ChangelogStore, Dedup, MemoryBackend, RocksDBBackend

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
    "MemoryBackend",
    "ReplayError",
    "ReplayPlan",
    "ResetPlan",
    "RetryPolicy",
    "RocksDBBackend",
    "SchemaCatalog",
    "Upcasters",
    "Verdict",
    "configure_logging",
    "default_catalog",
    "execute_reset",
    "group_offsets",
    "plan_replay",
    "plan_reset",
]
__version__ = "0.1.0"
