"""The RocksDB backend (through ``rocksdict``): state on disk, not bounded by memory.

One RocksDB database per store partition, under ``<path>/rocksdb``. Two key spaces in it:

* ``d`` + key -> 8-byte big-endian ``expires_at_ms`` + value (the entries);
* ``x`` + 8-byte big-endian ``expires_at_ms`` + key -> empty (the expiry index, so the
  entries due for expiry are a prefix scan, oldest first).

Index items are not removed when a key is rewritten or deleted (that would cost a read per
write); ``expired`` drops the stale ones it meets. Memory is bounded by the write buffers
and the block cache set here (a few tens of MB), whatever the number of entries.
"""

from __future__ import annotations

import shutil
import struct
from collections.abc import Iterator
from pathlib import Path

from rocksdict import BlockBasedOptions, Cache, Options, Rdict, WriteBatch, WriteBufferManager

from streams.state.base import NEVER, Backend, Changes, Entry, LocalStorage
from streams.state.errors import StateError

_DATA = b"d"
_INDEX = b"x"
_EXPIRY = struct.Struct(">Q")
_INDEX_END = b"y"  # first key after every index key


def _options(memtable_bytes: int, buffers: WriteBufferManager, cache: Cache) -> Options:
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.set_write_buffer_size(memtable_bytes)
    opts.set_max_write_buffer_number(2)
    opts.set_write_buffer_manager(buffers)
    table = BlockBasedOptions()
    table.set_block_cache(cache)
    # Bloom filters, in the table files and in the memtable: most reads look up a key
    # that is not there (dedup's first sightings), and without them each one searches
    # every level-0 file. Measured over 300k dedup ids: 1.79 µs a miss, 0.52 with both.
    table.set_bloom_filter(10, False)
    opts.set_block_based_table_factory(table)
    opts.set_memtable_prefix_bloom_ratio(0.1)
    opts.set_memtable_whole_key_filtering(True)
    return opts


class RocksDBStorage(LocalStorage):
    def __init__(self, path: Path, options: Options) -> None:
        self._path = path
        self._options = options
        try:
            self._db: Rdict | None = Rdict(str(path), options)
        except Exception as exc:  # rocksdict raises plain Exception for I/O and lock errors
            raise StateError(f"cannot open RocksDB store at {path}: {exc}") from exc

    @property
    def db(self) -> Rdict:
        if self._db is None:
            raise StateError(f"RocksDB store at {self._path} is closed")
        return self._db

    def get(self, key: bytes) -> Entry | None:
        db = self._db  # not ``self.db`` (a property call) on every record's path
        if db is None:
            db = self.db  # raises: closed
        raw = db.get(_DATA + key)
        if raw is None:
            return None
        return Entry(raw[8:], _EXPIRY.unpack_from(raw)[0])

    def write(self, changes: Changes) -> None:
        # The entries first, then their index items: RocksDB inserts a run of keys that
        # follow each other near where the last one went, and alternating between the two
        # key spaces lost that (measured: 1.1 µs a change in the write, 0.47 grouped).
        batch = WriteBatch(raw_mode=True)
        pack = _EXPIRY.pack
        indexed: list[bytes] = []
        for key, entry in changes.items():
            if entry is None:
                batch.delete(_DATA + key)
                continue
            expires = pack(entry.expires_at_ms)
            batch.put(_DATA + key, expires + entry.value)
            if entry.expires_at_ms != NEVER:
                indexed.append(_INDEX + expires + key)
        for index_key in indexed:
            batch.put(index_key, b"")
        self.db.write(batch)

    def expired(self, now_ms: int, limit: int) -> list[bytes]:
        db = self.db
        due: list[bytes] = []
        stale = WriteBatch(raw_mode=True)
        stale_count = 0
        it = db.iter()
        it.seek(_INDEX)
        while it.valid() and len(due) < limit:
            index_key: bytes = it.key()
            if index_key >= _INDEX_END:
                break
            expires_at = _EXPIRY.unpack_from(index_key, 1)[0]
            if expires_at > now_ms:
                break
            key = index_key[9:]
            raw = db.get(_DATA + key)
            if raw is not None and _EXPIRY.unpack_from(raw)[0] == expires_at:
                due.append(key)
            else:
                stale.delete(index_key)
                stale_count += 1
            it.next()
        del it
        if stale_count:
            db.write(stale)
        return due

    def items(self) -> Iterator[tuple[bytes, Entry]]:
        it = self.db.iter()
        it.seek(_DATA)
        while it.valid():
            key: bytes = it.key()
            if not key.startswith(_DATA):
                break
            raw: bytes = it.value()
            yield key[1:], Entry(raw[8:], _EXPIRY.unpack_from(raw)[0])
            it.next()

    def range(self, low: bytes, high: bytes) -> list[tuple[bytes, Entry]]:
        it = self.db.iter()
        it.seek(_DATA + low)
        end = _DATA + high
        found: list[tuple[bytes, Entry]] = []
        while it.valid():
            key: bytes = it.key()
            if key >= end:
                break
            raw: bytes = it.value()
            found.append((key[1:], Entry(raw[8:], _EXPIRY.unpack_from(raw)[0])))
            it.next()
        del it
        return found

    def estimated_count(self) -> int:
        # RocksDB's own estimate (its index entries included): no scan, no lock.
        return int(self.db.property_int_value("rocksdb.estimate-num-keys") or 0)

    def sync(self) -> None:
        self.db.flush_wal(True)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


class RocksDBBackend(Backend):
    """Disk storage. The partitions of a store draw on two pools they share, so its memory
    does not grow with its partition count: ``write_buffer_mb`` of memtables (RocksDB's
    write buffer manager flushes one to disk when the pool is nearly full) and a
    ``block_cache_mb`` block cache."""

    name = "rocksdb"
    persistent = True

    def __init__(self, *, write_buffer_mb: int = 32, block_cache_mb: int = 16) -> None:
        mb = 1024 * 1024
        self._buffers = WriteBufferManager(write_buffer_mb * mb, False)
        self._cache = Cache(block_cache_mb * mb)
        # One memtable may take a quarter of the pool: a busy partition flushes less often.
        self._memtable_bytes = max(write_buffer_mb * mb // 4, mb)

    def open(self, path: Path) -> LocalStorage:
        db_path = path / "rocksdb"
        db_path.parent.mkdir(parents=True, exist_ok=True)
        options = _options(self._memtable_bytes, self._buffers, self._cache)
        return RocksDBStorage(db_path, options)

    def destroy(self, path: Path) -> None:
        shutil.rmtree(path / "rocksdb", ignore_errors=True)
