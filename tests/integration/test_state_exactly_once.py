"""The changelog inside an exactly-once transaction: aborted writes never reach a store."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streams.cluster import Topics
from streams.state import ChangelogStore, RocksDBBackend


def test_changelog_records_of_an_aborted_transaction_are_never_restored(
    kafka_bootstrap: str, kafka_admin: AdminClient, app_id: str, tmp_path: Path
) -> None:
    def store(where: str) -> ChangelogStore:
        return ChangelogStore(
            app_id,
            "kv",
            RocksDBBackend(),
            consumer_config={"bootstrap.servers": kafka_bootstrap},
            state_dir=tmp_path / where,
            source_topic="input",
        )

    first = store("a")
    first.ensure_changelog(Topics(kafka_admin), input_partitions=1)
    part = first.open(0, committed_offset=None)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": f"{app_id}-0"})
    producer.init_transactions(30)

    producer.begin_transaction()
    part.transaction().set("kept", b"committed")
    part.flush(producer, source_offset=10)
    assert producer.flush(30) == 0
    part.check_delivered()
    producer.commit_transaction(30)
    part.apply()

    producer.begin_transaction()
    part.transaction().set("kept", b"aborted")
    part.transaction().set("ghost", b"aborted")
    part.flush(producer, source_offset=20)
    assert producer.flush(30) == 0
    producer.abort_transaction(30)
    part.abort()
    assert part.transaction().get("kept") == b"committed"
    first.close(0, keep=True)

    # No offset filter at all (committed_offset=None): read_committed alone hides them.
    other = store("b")
    restored = other.open(0, committed_offset=None)
    try:
        assert dict(restored.storage.items()).keys() == {b"kept"}
        assert restored.transaction().get("kept") == b"committed"
        assert restored.restore is not None and restored.restore.records_read == 1
    finally:
        other.close_all(keep=False)

    # The instance that aborted comes back from its checkpoint past the aborted records.
    again = store("a")
    back = again.open(0, committed_offset=10)
    try:
        assert back.transaction().get("kept") == b"committed"
        assert back.transaction().get("ghost") is None
    finally:
        again.close_all(keep=False)
