"""Streams: event streaming on Apache Kafka.

The public API is re-exported here, lazily (PEP 562): ``import streams`` (and so
``import streams.envelope``) loads no subpackage; ``streams.Runtime`` or
``from streams import Runtime`` imports the package that defines it on first use.
Everything else is private by default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streams.speedups import install

install()  # before any compiled module is imported: a stale compiled copy is not used

if TYPE_CHECKING:
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
else:
    from streams._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "streams.codec": [
                "AvroCodec",
                "Codec",
                "CodecError",
                "DecodeError",
                "EncodeError",
                "Upcasters",
            ],
            "streams.envelope": ["Envelope"],
            "streams.failures": ["RetryPolicy", "Verdict"],
            "streams.logs": ["configure_logging"],
            "streams.replay": [
                "ReplayError",
                "ReplayPlan",
                "ResetPlan",
                "execute_reset",
                "group_offsets",
                "plan_replay",
                "plan_reset",
            ],
            "streams.runtime": ["Runtime", "RuntimeConfig"],
            "streams.schemas": ["CompatibilityMode", "SchemaCatalog", "default_catalog"],
            "streams.state": ["ChangelogStore", "Dedup", "MemoryBackend", "RocksDBBackend"],
            "streams.topology": [
                "ErrorAction",
                "ProcessorContext",
                "Topology",
                "TopologyBuilder",
                "load_topology",
                "owned",
            ],
        },
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
