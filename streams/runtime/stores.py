"""The state of one runtime instance: its slot, its stores, and what processors are handed.

``RuntimeState.open(topology, config, current_partition)`` does the setup a stateful or
exactly-once instance needs before any client connects, without touching the broker:

* claims the instance's slot (``streams.runtime.slot``): its local state directory
  ``<state dir>/<app>/instance-<n>/`` and, for exactly-once, its ``transactional.id``;
* builds the app's ``StateManager`` with every store the topology declares (``rocksdb``
  or ``memory`` backend), each fed by the source topic it is partitioned like;
* ``routed``: one ``RoutedStore`` per store for the plan (``ctx.store(name)``, dedup).

Internal stores (failure routing's waiting rooms, say) are added the same way before the
runtime starts: ``state.manager.add_store(name, backend, source_topic=topic)``; they are
then restored, checkpointed and (exactly-once) committed with the topology's stores.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rich.console import Console

from streams.broker.local import state_root
from streams.runtime.config import RuntimeConfig
from streams.runtime.slot import InstanceSlot
from streams.state import (
    Backend,
    MemoryBackend,
    RestoreProgressBar,
    RocksDBBackend,
    RoutedStore,
    StateManager,
)
from streams.topology import Topology

# Client settings a restore consumer takes from the runtime's (connection and security).
_CLIENT_PREFIXES = ("bootstrap.", "security.", "sasl.", "ssl.", "client.", "socket.")

GUARANTEES = ("at_least_once", "exactly_once")


def processing_guarantee(topology: Topology, config: RuntimeConfig) -> str:
    """The guarantee in force: the config's when set, else the topology's."""
    guarantee = config.processing_guarantee or topology.processing_guarantee
    if guarantee not in GUARANTEES:
        from streams.runtime.errors import RuntimeFailure  # noqa: PLC0415

        raise RuntimeFailure(f"processing guarantee {guarantee!r} is not one of {GUARANTEES}")
    return guarantee


def default_state_dir() -> Path:
    """``$STREAMS_STATE_DIR/apps`` (else ``~/.local/state/streams/apps``)."""
    return state_root() / "apps"


def backend_for(name: str) -> Backend:
    return MemoryBackend() if name == "memory" else RocksDBBackend()


def restore_client_config(config: RuntimeConfig) -> dict[str, Any]:
    overrides: Mapping[str, Any] = config.consumer
    picked = {k: v for k, v in overrides.items() if k.startswith(_CLIENT_PREFIXES)}
    return {"bootstrap.servers": config.bootstrap, **picked}


class RuntimeState:
    """The slot, stores and routed stores of one instance (see the module docstring)."""

    def __init__(
        self,
        slot: InstanceSlot,
        manager: StateManager,
        routed: dict[str, RoutedStore],
        progress: RestoreProgressBar | None,
    ) -> None:
        self.slot = slot
        self.manager = manager
        self.routed = routed
        self._progress = progress

    @classmethod
    def open(
        cls,
        topology: Topology,
        config: RuntimeConfig,
        current_partition: Callable[[], int],
    ) -> RuntimeState:
        """Claim the slot and declare the stores. Raises ``InstanceSlotError``."""
        root = Path(config.state_dir) if config.state_dir else default_state_dir()
        slot = InstanceSlot.claim(root, topology.app_id, config.instance_id)
        progress: RestoreProgressBar | None = None
        if os.isatty(2):
            progress = RestoreProgressBar(Console(stderr=True))
        manager = StateManager(
            topology.app_id,
            consumer_config=restore_client_config(config),
            state_dir=slot.state_dir,
            progress=progress,
        )
        for name, spec in topology.stores.items():
            manager.add_store(
                name, backend_for(spec.backend), source_topic=topology.store_source(name)
            )
        routed = {name: manager.routed(name, current_partition) for name in topology.stores}
        return cls(slot, manager, routed, progress)

    def start(self) -> None:
        """Show restore progress on a terminal from now on."""
        if self._progress is not None:
            self._progress.__enter__()

    def close(self) -> None:
        """Release the slot (after the stores are closed)."""
        if self._progress is not None:
            self._progress.__exit__(None, None, None)
            self._progress = None
        self.slot.close()
