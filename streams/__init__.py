"""Streams: event streaming on Apache Kafka.

The public API is re-exported here; everything else is private by default.
"""

from streams.logs import configure_logging
from streams.state import ChangelogStore, Dedup, MemoryBackend, RocksDBBackend

__all__ = [
    "ChangelogStore",
    "Dedup",
    "MemoryBackend",
    "RocksDBBackend",
    "configure_logging",
]
__version__ = "0.1.0"
