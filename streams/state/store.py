"""Changelog-backed stores: what the runtime opens per assigned input partition.

The contract with the runtime, per store and per assigned input partition ``p``:

1. ``store.ensure_changelog(cluster, input_partitions)`` once at start: creates
   ``<app>-<store>-changelog`` (compacted, as many partitions as the input) or raises a
   :class:`~streams.state.errors.ChangelogTopicError` when it exists and does not fit.
2. ``part = store.open(p, committed_offset)`` on assignment, before any record of ``p`` is
   processed. Blocks while the partition is restored from the changelog (from the local
   checkpoint when there is a valid one, else from the beginning); progress goes to the
   store's ``progress`` callback and one log line. ``committed_offset`` is the input offset
   the runtime will resume from (the group's committed offset); changelog records tagged
   past it are skipped.
3. ``tx = part.transaction()`` while processing: ``get/set/delete/exists/put_if_absent``
   (with ``ttl``), buffered in memory, visible to later reads.
4. Between checkpoints, ``part.send(producer, source_offset)`` may produce the changes
   made so far (tagged with the input position they reflect), without waiting: what
   each checkpoint then has left to produce is small, and so is the loop's stall.
   At each checkpoint (commit interval), in this order:

   * ``part.flush(producer, source_offset)`` produces the buffered changes not sent yet
     (and tombstones for entries whose time to live has passed) to ``changelog[p]``
     through the runtime's producer; ``source_offset`` is the input offset about to be
     committed (last processed + 1). Does not wait for acks.
   * at-least-once: the runtime flushes its producer, calls ``part.check_delivered()``
     (raises :class:`~streams.state.errors.ChangelogWriteError` if a changelog record was
     not acked) and only then commits the input offsets.
     exactly-once: the producer's open transaction carries the changelog records; the
     runtime sends the offsets to the transaction and commits it.
   * ``part.apply()`` after the commit: writes the changes to the local storage and the
     local checkpoint (the runtime's ``apply(deferred=True)`` hands them over instead:
     reads see them at once, ``part.apply_some(n)`` writes them a chunk at a time between
     records, and the next flush, abort or close writes what is left first).
     ``part.abort()`` instead only when the input will be read again from the committed
     offsets (an aborted exactly-once transaction, then a seek back): it drops the
     changes, and reprocessing makes them again. An at-least-once commit
     that failed but will be retried without a rewind must still ``apply()``: the
     records are not read again, so dropping their changes would lose them (if the
     process dies first, open() finds the local copy ahead of the committed offset and
     rebuilds it from the changelog).

5. ``store.close(p, keep=...)`` on revoke: ``keep=True`` keeps the local copy (on disk
   with its checkpoint, or in memory for the memory backend) for a fast return; ``False``
   deletes it. Unapplied changes are dropped either way.

Applying locally only after the input commit is what keeps a crash from leaving the local
copy ahead of the committed input; the changelog tags keep a restore from doing so.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple

from streams.client_errors import transient
from streams.cluster import Topics
from streams.logs import get_logger
from streams.state.base import Backend, ChangelogProducer, Entry, LocalStorage
from streams.state.changelog import (
    changelog_topic,
    ensure_changelog_topic,
    source_headers,
    value_prefix,
)
from streams.state.checkpoint_file import (
    Checkpoint,
    read_checkpoint,
    remove_checkpoint,
    write_checkpoint,
)
from streams.state.errors import ChangelogWriteError, StateError, StoreClosedError
from streams.state.restore import (
    MakeConsumer,
    RestoreProgress,
    RestoreResult,
    restore_consumer,
    restore_partition,
    watermarks,
)
from streams.state.transaction import Clock, PartitionTransaction, to_ms

_log = get_logger("streams.state")


class _Delivery:
    """The failures of one flush's records (the runtime's producer reports failures only:
    ``delivery.report.only.error``; a success report, from another producer, is ignored),
    and the producer, to tell whether every record was settled."""

    __slots__ = ("error", "producer", "transient")

    def __init__(self, producer: ChangelogProducer) -> None:
        self.producer = producer
        self.error: str | None = None
        self.transient = False  # the first failure clears when the broker answers again

    def __call__(self, err: Any, _msg: Any) -> None:
        if err is not None and self.error is None:
            self.error = str(err)
            self.transient = transient(err)


class _Applying:
    """The committed changes of a partition not yet written to its local storage, in
    front of it for reads (what a ``PartitionTransaction`` reads through).

    ``write_some`` writes them in chunks, in the order they were made, and keeps the
    written ones in ``changes`` until the last chunk: a read finds the same entry there
    as in the storage, and nothing is copied or deleted per change."""

    __slots__ = ("_rest", "changes", "storage", "target", "unwritten")

    def __init__(self, storage: LocalStorage) -> None:
        self.storage = storage
        self.changes: dict[bytes, Entry | None] = {}
        self.unwritten = 0  # how many of ``changes`` are not in the storage yet
        self._rest: Iterator[tuple[bytes, Entry | None]] = iter(())
        self.target: Checkpoint | None = None  # the local checkpoint once all are written

    def get(self, key: bytes) -> Entry | None:
        changes = self.changes
        if changes and key in changes:
            return changes[key]
        return self.storage.get(key)

    def hand_over(self, changes: dict[bytes, Entry | None], target: Checkpoint) -> None:
        self.changes = changes
        self.unwritten = len(changes)
        self._rest = iter(changes.items())  # ``changes`` is not changed until written
        self.target = target

    def write_some(self, limit: int) -> int:
        if not self.unwritten:
            return 0
        chunk = dict(islice(self._rest, limit))
        self.storage.write(chunk)
        self.unwritten -= len(chunk)
        if not self.unwritten:
            self.changes = {}
        return len(chunk)


class ChangelogPartition:
    """One open partition of a :class:`ChangelogStore` (implements ``StorePartition``)."""

    def __init__(
        self,
        store: ChangelogStore,
        partition: int,
        storage: LocalStorage,
        checkpoint: Checkpoint,
        restore: RestoreResult | None,
    ) -> None:
        self.store = store
        self.partition = partition
        self.storage = storage
        self.checkpoint = checkpoint
        self.restore = restore
        """What the restore on open did (None when the partition came back from memory)."""
        self.expired_total = 0
        # Committed changes not written to the local storage yet (``apply`` hands them
        # over, ``apply_some`` writes them a chunk at a time); reads go through them.
        self._applying = _Applying(storage)
        self._tx = PartitionTransaction(self._applying, store.clock)
        self._undone = 0  # aborts, and rollbacks of finished transactions (``generation``)
        self._durable_at = time.monotonic()  # when the local copy was last synced
        self._pending: tuple[dict[bytes, Entry | None], _Delivery | None, int] | None = None
        self._delivery: _Delivery | None = None  # of the records sent since the last apply
        self._sent = 0
        # Keys whose undone changes a changelog holds (sent, then aborted without a
        # transaction), with their committed entries: written again until a commit.
        self._write_back: dict[bytes, Entry | None] = {}

    def transaction(self) -> PartitionTransaction:
        """The buffered changes since the last ``apply`` (the same object until then)."""
        return self._tx

    @property
    def generation(self) -> int:
        """Moves whenever changes are undone (an attempt rolled back, a checkpoint aborted):
        what a step derives from the partition's entries and keeps (an index of open
        windows) is stale once it moved."""
        return self._undone + self._tx.rolled_back

    def items(self) -> list[tuple[bytes, Entry]]:
        """Every entry as reads see it now (the local storage under the changes committed
        and not yet written, under the transaction's), expired ones included. Scans the
        whole partition: for rebuilding what is derived from it, not per record."""
        updates, applying = self._tx.updates, self._applying.changes
        found = [
            (key, entry)
            for key, entry in self.storage.items()
            if key not in updates and key not in applying
        ]
        found += [(k, e) for k, e in applying.items() if e is not None and k not in updates]
        found += [(k, e) for k, e in updates.items() if e is not None]
        return found

    def range(self, low: bytes, high: bytes) -> list[tuple[bytes, Entry]]:
        """The entries whose key is in ``[low, high)`` as reads see them now, in key order
        (expired ones included): a seek in the local storage, and a pass over the changes
        not written to it yet (so: at a window's close, not per record)."""
        found = dict(self.storage.range(low, high))
        for changes in (self._applying.changes, self._tx.updates):
            for key, entry in changes.items():
                if low <= key < high:
                    if entry is None:
                        found.pop(key, None)
                    else:
                        found[key] = entry
        return sorted(found.items())

    def send(self, producer: ChangelogProducer, source_offset: int) -> int:
        """Produce the changes made since the last send, tagged ``source_offset`` (the
        partition's position now), without waiting for acks; return how many records.

        Between checkpoints (with no attempt open), so that a checkpoint has little left
        to produce and the loop stalls less. A restore skips records tagged past the
        committed offset, as it does those of a checkpoint that did not commit. Raises
        :class:`StateError` if a flush was neither applied nor aborted.
        """
        if self._pending is not None:
            raise StateError(f"{self._where()}: sent after a flush, before apply() or abort()")
        return self._send(producer, source_offset) if self._tx.unsent else 0

    def flush(
        self, producer: ChangelogProducer, source_offset: int, *, now: float | None = None
    ) -> int:
        """Produce the changes not sent yet to the changelog, and end the checkpoint's
        changes: no write until ``apply`` or ``abort``. Returns how many changes the
        checkpoint holds (records were produced for each, now or by ``send``).

        Adds tombstones for up to ``store.expire_batch`` expired entries first. Blocks only
        while the producer's local queue is full. Raises :class:`StateError` if a previous
        flush was neither applied nor aborted.
        """
        if self._pending is not None:
            raise StateError(f"{self._where()}: flushed twice without apply() or abort()")
        self._finish_applying()  # the expiry scan below reads the storage itself
        tx = self._tx
        updates, unsent = tx.updates, tx.unsent
        now_ms = to_ms(self.store.clock() if now is None else now)
        for key in self.storage.expired(now_ms, self.store.expire_batch):
            if key not in updates:
                updates[key] = unsent[key] = None
                self.expired_total += 1
        if unsent:
            self._send(producer, source_offset)
        self._pending = (updates, self._delivery, source_offset)
        tx.frozen = True
        return len(updates)

    def _send(self, producer: ChangelogProducer, source_offset: int) -> int:
        tx = self._tx
        if tx.undo is not None:
            raise StateError(f"{self._where()}: changes sent while an attempt is open")
        delivery = self._delivery
        if delivery is None or delivery.producer is not producer:
            delivery = self._delivery = _Delivery(producer)
        updates, keys = tx.updates, tx.unsent
        tx.unsent = {}
        topic = self.store.changelog_topic
        partition = self.partition
        tombstone = source_headers(source_offset)
        # Entries written in the same millisecond with one time to live (dedup's) expire
        # together: their prefix is built once.
        expiry: int | None = None
        prefix = b""
        produce = producer.produce
        sent = 0
        for key in keys:
            if key not in updates:  # written by an attempt that was rolled back
                continue
            entry = updates[key]
            if entry is None:
                value, headers = None, tombstone
            else:
                if entry.expires_at_ms != expiry:
                    expiry = entry.expires_at_ms
                    prefix = value_prefix(source_offset, expiry)
                value, headers = prefix + entry.value, None  # tagged in the value
            while True:
                try:
                    # positional, as ``OutputSink.send`` does (keywords cost 0.5 µs a call)
                    produce(topic, value, key, partition, delivery, delivery, 0, headers)
                    break
                except BufferError:  # local queue full: serve deliveries, then retry
                    producer.poll(0.1)
            sent += 1
        self._sent += sent
        return sent

    def check_delivered(self) -> None:
        """Raise :class:`ChangelogWriteError` unless every record of the flush is acked:
        none failed, and the producer holds nothing unsettled.

        Call it after the producer's ``flush()``; never commit input offsets before it.
        """
        if self._pending is None:
            return
        delivery = self._pending[1]
        if delivery is None:
            return
        if delivery.error is not None:
            raise ChangelogWriteError(
                f"{self._where()}: a changelog record was not written ({delivery.error}); "
                "do not commit the input offsets",
                transient=delivery.transient,
            )
        outstanding = len(delivery.producer)
        if outstanding:
            raise ChangelogWriteError(
                f"{self._where()}: {outstanding} record(s) of the producer not acknowledged "
                "yet (flush the producer first)"
            )

    def apply(self, *, deferred: bool = False) -> None:
        """Write the flushed changes to the local storage and advance the checkpoint; start
        the next transaction.

        Call it once the input offsets (or the transaction) are committed. Blocks on local
        I/O (a WAL sync and a small file write for the disk backend, at most every
        ``durable_every_s``). ``deferred`` (the runtime's): only hand the changes over;
        reads see them at once (through them), ``apply_some`` writes them a chunk at a
        time between records, so the loop never stops for a whole checkpoint's worth of
        writes; the next flush, an abort or a close writes what is left first. The local
        checkpoint moves once all are written.
        """
        if self._pending is None:
            return
        self.check_delivered()
        updates, _delivery, source_offset = self._pending
        self._finish_applying()  # the previous checkpoint's, if still under way
        topic = self.store.changelog_topic
        if updates:
            # Where a restore of the local copy resumes: at most the changelog's end now
            # (no offsets come back from a producer reporting failures only; transaction
            # markers make it less), so a restore re-reads a few records, never skips one.
            resume = self.checkpoint.changelog_offset + self._sent
            self._applying.hand_over(updates, Checkpoint(topic, resume, source_offset))
            if not deferred:
                self._finish_applying()
        else:
            self.checkpoint = Checkpoint(topic, self.checkpoint.changelog_offset, source_offset)
        self._write_back = {}  # written with this commit's changes
        self._reset()

    def apply_some(self, limit: int) -> int:
        """Write up to ``limit`` of the changes ``apply`` handed over to the local storage;
        return how many were written (0: none left). The last chunk moves the checkpoint."""
        applying = self._applying
        written = applying.write_some(limit)
        if written and not applying.changes and applying.target is not None:
            self._applied(applying.target)
        return written

    @property
    def applying(self) -> int:
        """Changes committed and not yet written to the local storage."""
        return self._applying.unwritten

    def _finish_applying(self) -> None:
        if self._applying.unwritten:
            self.apply_some(self._applying.unwritten)

    def _applied(self, checkpoint: Checkpoint) -> None:
        self.checkpoint = checkpoint
        # A sync (and its checkpoint file) costs milliseconds: at most every
        # ``durable_every_s``, and at close. Between two, a crash of the machine (not of
        # the process: the OS holds the writes) costs a longer restore, never state: the
        # file only claims what was synced, and restores re-read from there.
        now = time.monotonic()
        if now - self._durable_at >= self.store.durable_every_s:
            self.store.save_checkpoint(self.partition, self.storage, checkpoint)
            self._durable_at = now

    def abort(self, *, rewrite_sent: bool = False) -> None:
        """Drop every change since the last ``apply`` (flushed or not). Changes already
        handed over by ``apply`` are committed: they are written first.

        ``rewrite_sent`` (no transaction: what was sent to the changelog stays there): the
        keys changed since the last ``apply``, if any change was sent, start the next
        changes with their committed entries, and do so after every abort until a commit
        writes them, so the changelog's last word on each is its committed value again (a
        restore after the next commit would bring the undone values back)."""
        self._finish_applying()
        if rewrite_sent and self._sent:
            read = self._applying.get  # the committed entries, the local storage's now
            self._write_back.update((key, read(key)) for key in self._tx.updates)
        self._undone += 1
        self._reset()
        if rewrite_sent and self._write_back:
            tx = self._tx
            tx.updates.update(self._write_back)
            tx.unsent.update(dict.fromkeys(self._write_back))

    def _reset(self) -> None:
        self._undone += self._tx.rolled_back
        self._pending = None
        self._delivery = None
        self._sent = 0  # records produced for the checkpoint under way
        self._tx = PartitionTransaction(self._applying, self.store.clock)

    def _where(self) -> str:
        return f"store {self.store.name!r} partition {self.partition}"


class ChangelogStore:
    """A named, changelog-backed store of an app (implements ``Store``).

    ``consumer_config`` is the client config used for restores (``bootstrap.servers`` and
    any security settings); ``make_consumer`` builds a consumer from a config (default:
    ``confluent_kafka.Consumer``; the test driver's are in memory). ``state_dir`` is where
    a persistent backend keeps its files: ``<state_dir>/<app>/<store>/<partition>/``.
    ``source_topic`` tags changelog records.
    """

    def __init__(
        self,
        app: str,
        name: str,
        backend: Backend,
        *,
        consumer_config: Mapping[str, Any],
        make_consumer: MakeConsumer | None = None,
        state_dir: Path | str | None = None,
        source_topic: str | None = None,
        clock: Clock = time.time,
        progress: RestoreProgress | None = None,
        expire_batch: int = 10_000,
        timeout: float = 30.0,
        durable_every_s: float = 10.0,
    ) -> None:
        if backend.persistent and state_dir is None:
            raise StateError(f"the {backend.name} backend needs a state_dir")
        self.app = app
        self.name = name
        self.changelog_topic = changelog_topic(app, name)
        self.backend = backend
        self.consumer_config = dict(consumer_config)
        self.make_consumer = make_consumer
        self.state_dir = Path(state_dir) if state_dir is not None else Path(".streams-memory")
        self.source_topic = source_topic
        self.clock = clock
        self.progress = progress
        self.expire_batch = expire_batch
        self.timeout = timeout
        self.durable_every_s = durable_every_s
        self._open: dict[int, ChangelogPartition] = {}
        self._kept: dict[int, tuple[LocalStorage, Checkpoint]] = {}

    def ensure_changelog(self, cluster: Topics, input_partitions: int) -> bool:
        """Create or validate the changelog topic (see ``ensure_changelog_topic``)."""
        return ensure_changelog_topic(cluster, self.changelog_topic, input_partitions)

    def partition_dir(self, partition: int) -> Path:
        return self.state_dir / self.app / self.name / str(partition)

    @property
    def partitions(self) -> Mapping[int, ChangelogPartition]:
        return self._open

    def partition(self, partition: int) -> ChangelogPartition:
        try:
            return self._open[partition]
        except KeyError:
            raise StoreClosedError(
                f"store {self.name!r} partition {partition} is not open on this instance"
            ) from None

    def open(self, partition: int, committed_offset: int | None) -> ChangelogPartition:
        """Restore partition ``partition`` and return it, ready for processing.

        Blocks for the restore. ``committed_offset``: the input offset processing resumes
        from (``None``: apply every changelog record). Raises ``CorruptChangelogError``,
        ``RestoreError`` or ``StateError``; the partition is then not open.
        """
        if partition in self._open:
            raise StateError(f"store {self.name!r} partition {partition} is already open")
        path = self.partition_dir(partition)
        checkpoint: Checkpoint | None
        kept = self._kept.pop(partition, None)
        if kept is not None:
            storage, checkpoint = kept
        else:
            storage = self.backend.open(path)
            checkpoint = None
            if self.backend.persistent:
                checkpoint = read_checkpoint(path, self.changelog_topic)
                if checkpoint is None:
                    storage = self._wipe(path, storage)  # data without a checkpoint: untrusted
        restored = self._restore(partition, path, storage, checkpoint, committed_offset)
        opened = ChangelogPartition(
            self, partition, restored.storage, restored.checkpoint, restored.restore
        )
        self._open[partition] = opened
        return opened

    def close(self, partition: int, *, keep: bool) -> None:
        """Close an open partition (on revoke). Unapplied changes are dropped."""
        part = self._open.pop(partition, None)
        if part is None:
            return
        part.abort()
        if not keep:
            part.storage.close()
            self.backend.destroy(self.partition_dir(partition))
            remove_checkpoint(self.partition_dir(partition))
        elif self.backend.persistent:
            self.save_checkpoint(partition, part.storage, part.checkpoint)
            part.storage.close()
        else:
            self._kept[partition] = (part.storage, part.checkpoint)

    def close_all(self, *, keep: bool = True) -> None:
        for partition in list(self._open):
            self.close(partition, keep=keep)
        if not keep:
            for storage, _ in self._kept.values():
                storage.close()
            self._kept.clear()

    def save_checkpoint(
        self, partition: int, storage: LocalStorage, checkpoint: Checkpoint
    ) -> None:
        """Sync ``storage`` then record ``checkpoint`` (persistent backends only)."""
        if self.backend.persistent:
            storage.sync()
            write_checkpoint(self.partition_dir(partition), checkpoint)

    def _wipe(self, path: Path, storage: LocalStorage) -> LocalStorage:
        storage.close()
        self.backend.destroy(path)
        remove_checkpoint(path)
        return self.backend.open(path)

    def _restore(
        self,
        partition: int,
        path: Path,
        storage: LocalStorage,
        checkpoint: Checkpoint | None,
        committed_offset: int | None,
    ) -> _Restored:
        consumer = restore_consumer(self.consumer_config, self.make_consumer)
        try:
            low, high = watermarks(consumer, self.changelog_topic, partition, self.timeout)
            start = low
            if checkpoint is not None:
                reason = _distrust(checkpoint, low, high, committed_offset)
                if reason is None:
                    start = checkpoint.changelog_offset
                else:
                    _log.warning(
                        "local state discarded, restoring from the changelog's beginning",
                        store=self.name,
                        partition=partition,
                        reason=reason,
                    )
                    storage = self._wipe(path, storage)
                    checkpoint = None
            restore = restore_partition(
                consumer,
                storage,
                topic=self.changelog_topic,
                partition=partition,
                start_offset=start,
                end_offset=high,
                committed_offset=committed_offset,
                progress=self.progress,
            )
            source = committed_offset
            if source is None and checkpoint is not None:
                source = checkpoint.source_offset
            restored = Checkpoint(self.changelog_topic, restore.end_offset, source)
            if checkpoint is None or restore.records_read:
                self.save_checkpoint(partition, storage, restored)
        except BaseException:
            storage.close()
            raise
        finally:
            consumer.close()
        return _Restored(storage, restored, restore)


class _Restored(NamedTuple):
    storage: LocalStorage
    checkpoint: Checkpoint
    restore: RestoreResult


def _distrust(checkpoint: Checkpoint, low: int, high: int, committed: int | None) -> str | None:
    """Why the local copy behind ``checkpoint`` cannot be continued, or None if it can."""
    if checkpoint.changelog_offset > high:
        return (
            f"checkpoint at changelog offset {checkpoint.changelog_offset} is past the "
            f"changelog's end {high} (was the topic recreated?)"
        )
    if checkpoint.changelog_offset < low:
        return (
            f"checkpoint at offset {checkpoint.changelog_offset} is before the changelog's "
            f"start {low}"
        )
    source = checkpoint.source_offset
    if committed is not None and source is not None and source > committed:
        return f"local state reflects input up to offset {source}, past the committed {committed}"
    return None
