"""The envelope: ids, conversation helpers, immutability."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime

import pytest

from streams.envelope import Envelope, envelope_from_fields, new_id


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
    assert validated.source == "shop"
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
