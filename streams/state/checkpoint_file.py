"""The local checkpoint: how far a store partition's local copy has been restored/applied.

A small JSON file next to the partition's data, ``<partition dir>/checkpoint.json``:

``{"version": 1, "changelog_topic": str, "changelog_offset": int, "source_offset": int|null}``

* ``changelog_offset``: the next changelog offset to read; everything before it is in the
  local storage. A restart of the same instance restores only from there (the tail).
* ``source_offset``: the input position (next input offset) the local copy reflects. If the
  committed input offset is now lower (offsets were reset, or a commit was lost), the local
  copy is ahead of the input and is rebuilt from the changelog instead.

Written after the local storage is synced (write to a temporary file, then an atomic
rename), so the file never claims more than the storage holds. A missing, unreadable or
foreign file means "no checkpoint": a full restore, never an error.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

FILE_NAME = "checkpoint.json"
_VERSION = 1


@dataclass(frozen=True, slots=True)
class Checkpoint:
    changelog_topic: str
    changelog_offset: int
    source_offset: int | None = None


def checkpoint_path(partition_dir: Path) -> Path:
    return partition_dir / FILE_NAME


def read_checkpoint(partition_dir: Path, changelog_topic: str) -> Checkpoint | None:
    """The checkpoint for ``changelog_topic``, or None when there is no usable one."""
    try:
        raw = json.loads(checkpoint_path(partition_dir).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or raw.get("version") != _VERSION:
        return None
    offset, source = raw.get("changelog_offset"), raw.get("source_offset")
    if raw.get("changelog_topic") != changelog_topic or not isinstance(offset, int) or offset < 0:
        return None
    if source is not None and not isinstance(source, int):
        return None
    return Checkpoint(changelog_topic, offset, source)


def write_checkpoint(partition_dir: Path, checkpoint: Checkpoint) -> None:
    """Atomically replace the checkpoint file (blocks on one small local write)."""
    partition_dir.mkdir(parents=True, exist_ok=True)
    target = checkpoint_path(partition_dir)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(
        json.dumps(
            {
                "version": _VERSION,
                "changelog_topic": checkpoint.changelog_topic,
                "changelog_offset": checkpoint.changelog_offset,
                "source_offset": checkpoint.source_offset,
            }
        )
    )
    os.replace(tmp, target)


def remove_checkpoint(partition_dir: Path) -> None:
    checkpoint_path(partition_dir).unlink(missing_ok=True)
