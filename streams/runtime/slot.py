"""Which instance of an app this process is on this machine: a stable, exclusive slot.

A stateful or exactly-once instance needs an identity that survives its own restart and
that no live instance shares: its local state lives under it (``<state dir>/<app>/
instance-<n>/``, so a restart finds its checkpoints and two instances on one machine never
open the same RocksDB), and its identity in the cluster is built from it (``identity``):
its ``transactional.id``, so a restarted instance fences its crashed predecessor and
aborts its open transaction at once instead of leaving read_committed readers stalled
until the transaction times out; and its ``group.instance.id`` (static membership), so a
restarted instance takes its partitions back without a rebalance.
A numbered slot's id also carries a random token made at its first claim and kept in
the slot's directory (``<app>-<n>-<token>``): instance 0 of one machine and instance 0
of another never share an identity (one would fence the other), and a restart on the
same machine still finds its own. Zombies of other machines are fenced by the consumer
group (exactly-once v2: offsets are sent with the group's metadata).

Slot ``n`` is held by an exclusive ``flock`` on ``instance-<n>.lock``; the kernel releases
it when the process dies, even by SIGKILL, so the restart claims the same slot. The lowest
free slot wins. ``instance_id`` (``--instance-id``) names the slot instead, for instances
that move between machines.
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
from pathlib import Path

from streams.errors import StreamsError

_LEGAL = re.compile(r"^[A-Za-z0-9._-]+$")


class InstanceSlotError(StreamsError):
    """The instance id is illegal, or its slot is held by another live process."""


class InstanceSlot:
    """A claimed slot; ``close()`` (or process exit) releases it. Claiming never blocks."""

    def __init__(self, app_dir: Path, name: str, fd: int, *, numbered: bool = True) -> None:
        self.name = name
        self.numbered = numbered
        self.state_dir = app_dir / f"instance-{name}"
        self._fd: int | None = fd

    @classmethod
    def claim(cls, root: Path | str, app_id: str, instance_id: str | None = None) -> InstanceSlot:
        """The lowest free slot under ``root/app_id`` (or ``instance_id``'s, which must be
        free). Raises InstanceSlotError."""
        app_dir = Path(root) / app_id
        app_dir.mkdir(parents=True, exist_ok=True)
        if instance_id is not None:
            if not _LEGAL.match(instance_id):
                raise InstanceSlotError(
                    f"instance id {instance_id!r} may only use letters, digits, '.', '_' and '-'"
                )
            fd = _try_lock(app_dir / f"instance-{instance_id}.lock")
            if fd is None:
                raise InstanceSlotError(
                    f"instance id {instance_id!r} of app {app_id!r} is in use by another "
                    f"process on this machine (lock {app_dir}/instance-{instance_id}.lock)"
                )
            return cls(app_dir, instance_id, fd, numbered=False)
        n = 0
        while True:
            fd = _try_lock(app_dir / f"instance-{n}.lock")
            if fd is not None:
                return cls(app_dir, str(n), fd)
            n += 1

    def identity(self, app_id: str) -> str:
        """The instance's ``transactional.id`` and ``group.instance.id``: ``<app>-<instance
        id>`` for a named slot, ``<app>-<n>-<token>`` for a numbered one (see the module
        docstring)."""
        if not self.numbered:
            return f"{app_id}-{self.name}"
        return f"{app_id}-{self.name}-{_token(self.state_dir)}"

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the lock
            self._fd = None


def _token(slot_dir: Path) -> str:
    """The slot's random token, made (and kept in ``slot_dir/token``) at the first call;
    the caller holds the slot's lock, so no other process writes it."""
    path = slot_dir / "token"
    try:
        token = path.read_text().strip()
    except FileNotFoundError:
        token = ""
    if not _LEGAL.match(token):
        slot_dir.mkdir(parents=True, exist_ok=True)
        token = secrets.token_hex(6)
        path.write_text(token + "\n")
    return token


def _try_lock(path: Path) -> int | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd
