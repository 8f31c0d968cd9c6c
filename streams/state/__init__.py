"""Changelog-backed state stores and deduplication.

See ``streams.state.store`` for the contract with the runtime (open, transaction, flush,
apply, close), ``streams.state.changelog`` for the changelog record format, and
``streams.state.dedup`` for the dedup logic.
"""

from streams.state.base import (
    NEVER,
    Backend,
    Entry,
    LocalStorage,
    Store,
    StorePartition,
    Transaction,
)
from streams.state.changelog import ChangelogRecord, changelog_topic, ensure_changelog_topic
from streams.state.checkpoint import Checkpoint
from streams.state.dedup import Dedup
from streams.state.errors import (
    ChangelogCompactionError,
    ChangelogPartitionCountError,
    ChangelogTopicError,
    ChangelogWriteError,
    CorruptChangelogError,
    RestoreError,
    StateError,
    StoreClosedError,
)
from streams.state.manager import StateManager
from streams.state.memory import MemoryBackend
from streams.state.progress import RestoreProgressBar
from streams.state.recovery import RestoreResult
from streams.state.rocksdb import RocksDBBackend
from streams.state.routed import RoutedStore
from streams.state.store import ChangelogPartition, ChangelogStore
from streams.state.transaction import PartitionTransaction

__all__ = [
    "NEVER",
    "Backend",
    "ChangelogCompactionError",
    "ChangelogPartition",
    "ChangelogPartitionCountError",
    "ChangelogRecord",
    "ChangelogStore",
    "ChangelogTopicError",
    "ChangelogWriteError",
    "Checkpoint",
    "CorruptChangelogError",
    "Dedup",
    "Entry",
    "LocalStorage",
    "MemoryBackend",
    "PartitionTransaction",
    "RestoreError",
    "RestoreProgressBar",
    "RestoreResult",
    "RocksDBBackend",
    "RoutedStore",
    "StateError",
    "StateManager",
    "Store",
    "StoreClosedError",
    "StorePartition",
    "Transaction",
    "changelog_topic",
    "ensure_changelog_topic",
]
