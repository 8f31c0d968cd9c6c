"""The state of one runtime instance: its slot and its stores.

``claim_slot(app_id, config)`` claims the instance's slot (``streams.runtime.slot``): its
local state directory ``<state dir>/<app>/instance-<n>/`` and its identity in the cluster
(``identity``: the ``transactional.id`` of exactly-once, the ``group.instance.id`` of
static membership). The caller releases it (``InstanceSlot.close``) after the state.

``LocalStores.open(topology, config, slot, make_consumer, clock)`` does the setup a
stateful or exactly-once instance needs before anything connects: it builds the app's
``StateManager`` with every store the topology declares (``rocksdb`` or ``memory``
backend), each fed by the source topic it is partitioned like, kept in the slot's
directory and restored through consumers from ``make_consumer`` (the runtime's client
factory).

With ``state_dir=":memory:"`` (``IN_MEMORY``, what the ``TestDriver`` uses) every store is
kept in memory, nothing touches the disk and no slot is claimed.

Internal stores (failure routing's waiting rooms) are added to ``manager`` before the
runtime starts; they are then restored, checkpointed and (exactly-once) committed with
the topology's stores.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streams.config import client_config, state_root
from streams.pipeline.crash_guard import CrashGuard
from streams.pipeline.errors import RuntimeFailure
from streams.runtime.config import RuntimeConfig
from streams.runtime.slot import InstanceSlot
from streams.state import Backend, MemoryBackend, RocksDBBackend, StateManager
from streams.topology import Topology
from streams.topology.stores import GUARANTEES

IN_MEMORY = ":memory:"
"""``RuntimeConfig.state_dir`` for stores kept in memory, with no slot on disk."""

# Client settings a restore consumer takes from the runtime's (connection and security).
_CLIENT_PREFIXES = ("bootstrap.", "security.", "sasl.", "ssl.", "client.", "socket.")


def processing_guarantee(topology: Topology, config: RuntimeConfig) -> str:
    """The guarantee in force: the config's when set, else the topology's."""
    guarantee = config.processing_guarantee or topology.processing_guarantee
    if guarantee not in GUARANTEES:
        raise RuntimeFailure(f"processing guarantee {guarantee!r} is not one of {GUARANTEES}")
    return guarantee


def default_state_dir() -> Path:
    """``$STREAMS_STATE_DIR/apps`` (else ``~/.local/state/streams/apps``)."""
    return state_root() / "apps"


def apps_dir(config: RuntimeConfig) -> Path:
    """Where the apps' local state lives: ``config.state_dir``, else the default."""
    return Path(config.state_dir) if config.state_dir else default_state_dir()


def restore_client_config(config: RuntimeConfig) -> dict[str, Any]:
    """The restore consumers' config: every client's settings, and the consumer settings
    that say how to connect (not the group's: restores assign, never join)."""
    picked = {k: v for k, v in config.consumer.items() if k.startswith(_CLIENT_PREFIXES)}
    return client_config(config.bootstrap, {**config.client, **picked})


def needs_state(topology: Topology, guarantee: str) -> bool:
    """Stores, failure routing (its waiting rooms are stores) and exactly-once (its
    ``transactional.id`` comes from the slot) need ``LocalStores``."""
    return bool(topology.stores or topology.retry_policies) or guarantee == "exactly_once"


def claim_slot(app_id: str, config: RuntimeConfig) -> InstanceSlot | None:
    """The instance's slot (``config.instance_id``'s, else the lowest free one); None in
    memory. Raises ``InstanceSlotError``."""
    if config.state_dir == IN_MEMORY:
        return None
    return InstanceSlot.claim(apps_dir(config), app_id, config.instance_id)


def identity(app_id: str, config: RuntimeConfig, slot: InstanceSlot | None) -> str | None:
    """The instance's name in the cluster: its slot's (``InstanceSlot.identity``); without
    a slot, ``<app>-<instance id>`` when the config names one, else None."""
    if slot is not None:
        return slot.identity(app_id)
    return f"{app_id}-{config.instance_id}" if config.instance_id else None


def transactional_id(app_id: str, config: RuntimeConfig, slot: InstanceSlot | None) -> str:
    """The instance's ``transactional.id``: its ``identity``, else one of its own for this
    process (``<app>-memory-<random>``: never shared with another machine's)."""
    return identity(app_id, config, slot) or f"{app_id}-memory-{secrets.token_hex(6)}"


class LocalStores:
    """The stores of one instance on this machine (see the module docstring): their
    ``StateManager`` (``state``, as ``Runtime.state``), in the slot's directory, and the
    restore progress shown on a terminal."""

    def __init__(self, manager: StateManager, slot: InstanceSlot | None, progress: Any) -> None:
        self.state = manager
        self.slot = slot
        self._progress = progress

    @classmethod
    def open(
        cls,
        topology: Topology,
        config: RuntimeConfig,
        slot: InstanceSlot | None,
        make_consumer: Callable[[dict[str, Any]], Any],
        clock: Callable[[], float],
    ) -> LocalStores:
        """Declare the stores, kept in ``slot``'s directory (``claim_slot``; None: in
        memory)."""
        in_memory = config.state_dir == IN_MEMORY
        state_dir: Path | None = None
        progress = None
        if slot is not None:
            state_dir = slot.state_dir
            if os.isatty(2):
                from rich.console import Console  # noqa: PLC0415 - only on a terminal

                from streams.state import RestoreProgressBar  # noqa: PLC0415

                progress = RestoreProgressBar(Console(stderr=True))
        manager = StateManager(
            topology.app_id,
            consumer_config=restore_client_config(config),
            make_consumer=make_consumer,
            state_dir=state_dir,
            progress=progress,
            clock=clock,
        )
        for name, spec in topology.stores.items():
            backend: Backend = (
                MemoryBackend() if in_memory or spec.backend == "memory" else RocksDBBackend()
            )
            manager.add_store(name, backend, source_topic=topology.store_source(name))
        return cls(manager, slot, progress)

    def start(self) -> None:
        """Show restore progress on a terminal from now on."""
        if self._progress is not None:
            self._progress.__enter__()

    def close(self) -> None:
        """Close every store (local copies kept; unapplied changes dropped); the slot stays
        claimed (its claimer releases it)."""
        self.state.close(keep=True)
        if self._progress is not None:
            self._progress.__exit__(None, None, None)
            self._progress = None


def crash_guard(
    app_id: str, config: RuntimeConfig, stores: LocalStores | None
) -> CrashGuard | None:
    """The instance's crash guard: its files in the slot's directory (or, for an app
    without state, ``<state dir>/<app>/crash-guard``); None in memory or with
    ``crash_limit=0``."""
    if config.crash_limit <= 0 or config.state_dir == IN_MEMORY:
        return None
    if stores is not None and stores.slot is not None:
        directory = stores.slot.state_dir / "crash-guard"
    else:
        directory = apps_dir(config) / app_id / "crash-guard"
    return CrashGuard(directory, config.crash_limit)
