"""Instance slots: stable across a restart, exclusive while a process holds one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from streams.runtime.slot import InstanceSlot, InstanceSlotError


def test_the_lowest_free_slot_is_claimed_and_freed_on_close(tmp_path: Path) -> None:
    first = InstanceSlot.claim(tmp_path, "app")
    second = InstanceSlot.claim(tmp_path, "app")
    assert (first.name, second.name) == ("0", "1")
    assert first.state_dir == tmp_path / "app" / "instance-0"
    tid = first.identity("app")
    first.close()
    again = InstanceSlot.claim(tmp_path, "app")  # a restart gets its old slot back
    assert again.name == "0"
    assert again.identity("app") == tid  # and its id: it fences its predecessor
    again.close()
    second.close()


def test_slot_0_of_two_machines_never_shares_an_identity(tmp_path: Path) -> None:
    here = InstanceSlot.claim(tmp_path / "machine-a", "app")
    there = InstanceSlot.claim(tmp_path / "machine-b", "app")
    assert here.name == there.name == "0"
    ours, theirs = here.identity("app"), there.identity("app")
    assert ours.startswith("app-0-") and theirs.startswith("app-0-") and ours != theirs
    here.close()
    there.close()


def test_a_killed_process_releases_its_slot(tmp_path: Path) -> None:
    code = (
        "import sys, time\n"
        "from streams.runtime.slot import InstanceSlot\n"
        f"InstanceSlot.claim({str(tmp_path)!r}, 'app')\n"
        "print('claimed', flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"claimed"
        held = InstanceSlot.claim(tmp_path, "app")
        assert held.name == "1"  # slot 0 is the child's
        held.close()
    finally:
        proc.kill()
        proc.wait()
    back = InstanceSlot.claim(tmp_path, "app")  # the kernel released the lock
    assert back.name == "0"
    back.close()


def test_a_named_instance_id_is_exclusive_and_must_be_legal(tmp_path: Path) -> None:
    slot = InstanceSlot.claim(tmp_path, "app", "eu-1")
    assert slot.identity("app") == "app-eu-1"
    with pytest.raises(InstanceSlotError, match="in use by another process"):
        InstanceSlot.claim(tmp_path, "app", "eu-1")
    slot.close()
    with pytest.raises(InstanceSlotError, match="may only use"):
        InstanceSlot.claim(tmp_path, "app", "eu/1")
