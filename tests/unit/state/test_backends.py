"""Both backends behind one suite: what the store layer relies on from local storage."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from streams.state import NEVER, Backend, Entry, LocalStorage, MemoryBackend, RocksDBBackend

BACKENDS = {"memory": MemoryBackend, "rocksdb": RocksDBBackend}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Backend:
    return BACKENDS[request.param]()  # type: ignore[abstract]


@pytest.fixture
def storage(backend: Backend, tmp_path: Path) -> Iterator[LocalStorage]:
    opened = backend.open(tmp_path / "p0")
    yield opened
    opened.close()


def test_written_entries_read_back_and_deletes_remove_them(storage: LocalStorage) -> None:
    storage.write({b"a": Entry(b"1"), b"b": Entry(b"2", 5_000), b"empty": Entry(b"")})
    assert storage.get(b"a") == Entry(b"1", NEVER)
    assert storage.get(b"b") == Entry(b"2", 5_000)
    assert storage.get(b"empty") == Entry(b"", NEVER)  # empty is a value, not a delete
    storage.write({b"a": None, b"b": Entry(b"22")})
    assert storage.get(b"a") is None
    assert storage.get(b"b") == Entry(b"22", NEVER)
    assert dict(storage.items()) == {b"b": Entry(b"22"), b"empty": Entry(b"")}
    assert storage.count() == 2


def test_binary_keys_and_values_are_kept_exactly(storage: LocalStorage) -> None:
    keys = [b"", b"\x00", b"\xff" * 40, b"x\x00y", "é".encode()]
    storage.write({k: Entry(k[::-1] + b"\x00") for k in keys})
    assert {k: storage.get(k) for k in keys} == {k: Entry(k[::-1] + b"\x00") for k in keys}


def test_deleting_a_missing_key_is_harmless(storage: LocalStorage) -> None:
    storage.write({b"ghost": None})
    assert storage.get(b"ghost") is None
    assert storage.count() == 0


def test_expired_lists_due_keys_oldest_first_up_to_the_limit(storage: LocalStorage) -> None:
    storage.write(
        {
            b"late": Entry(b"", 3_000),
            b"early": Entry(b"", 1_000),
            b"forever": Entry(b""),
            b"mid": Entry(b"", 2_000),
        }
    )
    assert storage.expired(now_ms=999, limit=10) == []
    assert storage.expired(now_ms=2_000, limit=10) == [b"early", b"mid"]
    assert storage.expired(now_ms=10_000, limit=2) == [b"early", b"mid"]
    assert storage.expired(now_ms=10_000, limit=10) == [b"early", b"mid", b"late"]
    # expired() only reports; the caller deletes.
    assert storage.get(b"early") == Entry(b"", 1_000)


def test_rewritten_or_deleted_keys_are_not_reported_by_their_old_expiry(
    storage: LocalStorage,
) -> None:
    storage.write({b"renewed": Entry(b"", 1_000), b"gone": Entry(b"", 1_000)})
    storage.write({b"renewed": Entry(b"", 9_000), b"gone": None})
    assert storage.expired(now_ms=5_000, limit=10) == []
    assert storage.expired(now_ms=9_000, limit=10) == [b"renewed"]
    storage.write({b"renewed": Entry(b"forever")})
    assert storage.expired(now_ms=99_000, limit=10) == []


def test_a_key_renewed_to_the_same_expiry_is_reported_once(storage: LocalStorage) -> None:
    storage.write({b"k": Entry(b"", 1_000)})
    storage.write({b"k": Entry(b"v", 1_000)})
    assert storage.expired(now_ms=1_000, limit=10) == [b"k"]


def test_rocksdb_keeps_entries_and_expiry_across_reopen(tmp_path: Path) -> None:
    backend = RocksDBBackend()
    first = backend.open(tmp_path)
    first.write({b"k": Entry(b"v", 1_000), b"n": Entry(b"w")})
    first.sync()
    first.close()
    second = backend.open(tmp_path)
    try:
        assert second.get(b"k") == Entry(b"v", 1_000)
        assert second.expired(now_ms=1_000, limit=10) == [b"k"]
        assert second.count() == 2
    finally:
        second.close()
    backend.destroy(tmp_path)
    third = backend.open(tmp_path)
    try:
        assert third.count() == 0
    finally:
        third.close()


def test_memory_backend_forgets_on_reopen(tmp_path: Path) -> None:
    backend = MemoryBackend()
    first = backend.open(tmp_path)
    first.write({b"k": Entry(b"v")})
    first.close()
    assert backend.open(tmp_path).get(b"k") is None
