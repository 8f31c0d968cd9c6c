"""The state step of ``make demo``: dedup over a changelog-backed store, then a restore.

Until the runtime drives stores itself, the step does what the runtime will at each commit:
dedup a stream with duplicates, flush the store to its changelog, wait for the acks, apply.
Then it drops the local state and restores it from the changelog.
"""

from __future__ import annotations

import tempfile
import time
from typing import TYPE_CHECKING

from confluent_kafka import Producer

from streams.admin import admin_client
from streams.state.dedup import Dedup
from streams.state.rocksdb import RocksDBBackend
from streams.state.store import ChangelogStore

if TYPE_CHECKING:
    from streams.demo import DemoContext


def step_state(ctx: DemoContext, ids: int = 500) -> None:
    """Every id arrives twice; each is processed once; the store survives losing its disk."""
    app = f"demo-{ctx.run_id}"
    ctx.topic("dedup-changelog")  # registers <app>-dedup-changelog for cleanup
    producer = Producer({"bootstrap.servers": ctx.bootstrap, "enable.idempotence": True})
    with tempfile.TemporaryDirectory(prefix="streams-demo-state-") as state_dir:
        store = ChangelogStore(
            app,
            "dedup",
            RocksDBBackend(),
            consumer_config={"bootstrap.servers": ctx.bootstrap},
            state_dir=state_dir,
            source_topic="orders",
        )
        store.ensure_changelog(admin_client(ctx.bootstrap), input_partitions=1)
        part = store.open(0, committed_offset=0)
        dedup = Dedup(part.transaction, ttl=7 * 24 * 3600)
        now = time.time()
        processed = sum(dedup.first(f"order-{i % ids}", now) for i in range(2 * ids))
        part.flush(producer, source_offset=2 * ids)
        producer.flush(30)
        part.check_delivered()
        part.apply()
        ctx.say(
            "dedup",
            f"{2 * ids} records, {processed} processed, {dedup.duplicates} duplicates dropped; "
            f"store changelog {store.changelog_topic} (compacted)",
        )
        store.close(0, keep=False)  # the local RocksDB is deleted
        restored = store.open(0, committed_offset=2 * ids)
        assert restored.restore is not None
        count = restored.storage.count()
        store.close_all(keep=False)
    ctx.say(
        "state restore",
        f"local state deleted, {count} entries restored from the changelog "
        f"in {restored.restore.seconds:.2f} s",
    )
    if processed != ids or count != ids:
        raise RuntimeError(f"dedup demo: processed {processed}, restored {count}, expected {ids}")
