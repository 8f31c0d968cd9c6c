"""The envelope: ids, conversation helpers, immutability."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime

import pytest

from streams.codec import AvroCodec
from streams.envelope import (
    DEFAULT_SOURCE,
    Envelope,
    envelope_from_fields,
    epoch_ms,
    held_micros,
    new_id,
)
from streams.schemas import default_catalog


def test_ids_are_uuid7_unique_and_increase_in_creation_order() -> None:
    ids = [new_id() for _ in range(20_000)]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)
    parsed = uuid.UUID(ids[0])
    assert parsed.version == 7
    assert parsed.variant == uuid.RFC_4122
    ms = int.from_bytes(parsed.bytes[:6], "big")
    assert abs(ms / 1000 - datetime.now(UTC).timestamp()) < 60


def test_new_starts_a_conversation() -> None:
    env = Envelope.new("order.placed", {"order_id": "o-1"}, key="o-1", source="shop")
    assert env.correlation_id == env.id
    assert env.causation_id is None
    assert env.time.tzinfo is not None
    assert (env.type, env.version, env.key, env.source) == ("order.placed", 1, "o-1", "shop")


def test_follow_keeps_the_conversation_and_points_at_its_cause() -> None:
    placed = Envelope.new("order.placed", {"order_id": "o-1"}, key="o-1", source="shop")
    validated = placed.follow("order.validated", {"order_id": "o-1", "total_cents": 1})
    accepted = validated.follow("order.accepted", {"order_id": "o-1"}, source="fulfilment")
    assert validated.correlation_id == accepted.correlation_id == placed.id
    assert validated.causation_id == placed.id
    assert accepted.causation_id == validated.id
    assert validated.key == "o-1"
    assert validated.source == DEFAULT_SOURCE  # made here, not by the cause's service
    assert accepted.source == "fulfilment"
    assert len({placed.id, validated.id, accepted.id}) == 3


def test_envelopes_are_immutable_and_with_data_copies() -> None:
    env = Envelope.new("order.placed", {"a": 1})
    with pytest.raises(dataclasses.FrozenInstanceError):
        env.type = "x"  # type: ignore[misc]
    changed = env.with_data({"a": 2}, version=2)
    assert (env.data, env.version) == ({"a": 1}, 1)
    assert (changed.data, changed.version, changed.id) == ({"a": 2}, 2, env.id)


def test_the_fast_constructor_builds_the_same_envelope() -> None:
    env = Envelope.new("order.placed", {"a": 1}, key="k")
    fast = envelope_from_fields(*(getattr(env, f.name) for f in dataclasses.fields(Envelope)))
    assert fast == env
    assert hash(fast.id) == hash(env.id)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.key = "other"  # type: ignore[misc]


def test_a_million_ids_in_a_tight_loop_are_unique_valid_uuid7_in_creation_order() -> None:
    ids = [new_id() for _ in range(1_000_000)]
    assert len(set(ids)) == len(ids)
    assert sorted(ids) == ids
    for text in (ids[0], ids[len(ids) // 2], ids[-1]):
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert (parsed.version, parsed.variant) == (7, uuid.RFC_4122)
    first_ms = int(ids[0][:8] + ids[0][9:13], 16)
    last_ms = int(ids[-1][:8] + ids[-1][9:13], 16)
    now_ms = datetime.now(UTC).timestamp() * 1000
    assert first_ms <= last_ms <= now_ms + 1  # the counter never pushes time ahead


def test_ids_made_in_threads_are_unique() -> None:
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    with ThreadPoolExecutor(4) as pool:
        batches = list(pool.map(lambda _: [new_id() for _ in range(20_000)], range(4)))
    every = [i for batch in batches for i in batch]
    assert len(set(every)) == len(every)
    assert all(batch == sorted(batch) for batch in batches)


def test_a_forked_child_draws_its_own_random_bits() -> None:
    import multiprocessing  # noqa: PLC0415

    new_id()  # the parent's counter and random pool are in use when it forks
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        child = pool.apply(_ids, (500,))
    parent = _ids(500)
    # The last 32 bits are random per id: a child replaying its parent's pool would share
    # hundreds of them; independent draws share one with odds of 1 in 17,000, two never.
    shared = {i[-8:] for i in child} & {i[-8:] for i in parent}
    assert len(shared) <= 1
    assert not set(child) & set(parent)


def _ids(n: int) -> list[str]:
    return [new_id() for _ in range(n)]


def test_with_data_keeps_every_other_field_and_checks_changed_names() -> None:
    env = Envelope.new("order.placed", {"a": 1}, key="k", source="shop")
    same = env.with_data({"a": 2})
    assert dataclasses.replace(same, data=env.data) == env
    rekeyed = env.with_data(env.data, key="other")
    assert (rekeyed.key, rekeyed.id, rekeyed.time) == ("other", env.id, env.time)
    with pytest.raises(TypeError):
        env.with_data({}, colour="red")


def test_with_source_changes_the_source_alone_for_made_and_read_envelopes() -> None:
    made = Envelope.new("order.placed", {"a": 1}, key="k").follow("order.accepted", {"b": 2})
    data = {"order_id": "o", "customer_id": "c", "items": [], "total_cents": 1, "currency": "EUR"}
    codec = AvroCodec(default_catalog())
    read = codec.decode(*codec.encode(Envelope.new("order.placed", data, version=2)), lazy=True)
    for env in (made, read):
        moved = env.with_source("pricing")
        assert moved.source == "pricing" and env.source != "pricing"
        assert dataclasses.replace(moved, source=env.source) == env


def test_follow_and_new_are_ordinary_envelopes() -> None:
    env = Envelope.new("order.placed", {"a": 1})
    reply = env.follow("order.accepted", {"b": 2})
    for made in (env, reply):
        assert made == Envelope(**{f.name: getattr(made, f.name) for f in dataclasses.fields(made)})
        assert made.time.tzinfo is UTC


def test_time_ms_is_the_time_in_epoch_milliseconds_rounded_down_whether_read_or_made() -> None:
    when = datetime(2026, 1, 1, 12, 0, 0, 999_999, tzinfo=UTC)
    data = {"order_id": "o", "customer_id": "c", "items": [], "total_cents": 1, "currency": "EUR"}
    env = dataclasses.replace(Envelope.new("order.placed", data, version=2), time=when)
    codec = AvroCodec(default_catalog())
    read = codec.decode(*codec.encode(env), lazy=True)
    assert env.time_ms == read.time_ms == epoch_ms(when) == 1767268800999
    assert read.time == when and read.time_ms == 1767268800999  # after the datetime is made
    assert epoch_ms(datetime(1969, 12, 31, 23, 59, 59, 999_500, tzinfo=UTC)) == -1
    assert epoch_ms(datetime(2026, 1, 1, 12)) == epoch_ms(datetime(2026, 1, 1, 12, tzinfo=UTC))


def test_a_made_envelope_holds_its_time_until_read_and_is_written_with_that_time() -> None:
    """``new`` and ``follow`` stamp microseconds, not a datetime: the codec writes them as
    they are, and the time read back, the datetime made later and ``time_ms`` agree."""
    data = {"order_id": "o", "customer_id": "c", "items": [], "total_cents": 1, "currency": "EUR"}
    before = datetime.now(UTC)
    made = Envelope.new("order.placed", {"a": 1}).follow("order.placed", data, version=2)
    held = held_micros(made)
    assert held is not None
    codec = AvroCodec(default_catalog())
    read = codec.decode(*codec.encode(made))  # written from the microseconds held
    assert made.time_ms == held // 1000  # no datetime made for it
    assert held_micros(made) == held
    assert before <= made.time == read.time <= datetime.now(UTC)  # the clock of utc_now
    assert held_micros(made) is None  # read once: a datetime from now on
    assert codec.decode(*codec.encode(made)).time == read.time
    assert held_micros(Envelope(type="t", data={})) is None  # constructed: a datetime
