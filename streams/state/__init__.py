"""Changelog-backed state stores and deduplication.

See ``streams.state.store`` for the contract with the runtime (open, transaction, flush,
apply, close), ``streams.state.changelog`` for the changelog record format, and
``streams.state.dedup`` for the dedup logic.

The names below are re-exported lazily (PEP 562): ``from streams.state import Entry``
loads neither RocksDB nor the terminal progress bar.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
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
    from streams.state.checkpoint_file import Checkpoint
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
    from streams.state.restore import RestoreResult
    from streams.state.rocksdb import RocksDBBackend
    from streams.state.routed import RoutedStore
    from streams.state.store import ChangelogPartition, ChangelogStore
    from streams.state.transaction import PartitionTransaction
else:
    from streams._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "streams.state.base": [
                "NEVER",
                "Backend",
                "Entry",
                "LocalStorage",
                "Store",
                "StorePartition",
                "Transaction",
            ],
            "streams.state.changelog": [
                "ChangelogRecord",
                "changelog_topic",
                "ensure_changelog_topic",
            ],
            "streams.state.checkpoint_file": ["Checkpoint"],
            "streams.state.dedup": ["Dedup"],
            "streams.state.errors": [
                "ChangelogCompactionError",
                "ChangelogPartitionCountError",
                "ChangelogTopicError",
                "ChangelogWriteError",
                "CorruptChangelogError",
                "RestoreError",
                "StateError",
                "StoreClosedError",
            ],
            "streams.state.manager": ["StateManager"],
            "streams.state.memory": ["MemoryBackend"],
            "streams.state.progress": ["RestoreProgressBar"],
            "streams.state.restore": ["RestoreResult"],
            "streams.state.rocksdb": ["RocksDBBackend"],
            "streams.state.routed": ["RoutedStore"],
            "streams.state.store": ["ChangelogPartition", "ChangelogStore"],
            "streams.state.transaction": ["PartitionTransaction"],
        },
    )

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
