"""Unique, self-cleaning topics for tests."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping

from confluent_kafka.admin import AdminClient

from streams.cluster import create_topic, delete_topics

_UNSAFE = re.compile(r"[^a-zA-Z0-9._-]+")


def unique_topic_name(hint: str = "t") -> str:
    """A topic name no other test (or run) will pick: a readable hint plus a random suffix."""
    cleaned = _UNSAFE.sub("-", hint).strip("-.")[:60] or "t"
    return f"{cleaned}-{uuid.uuid4().hex[:10]}"


class TopicFactory:
    """Creates topics on demand and deletes every one of them on ``cleanup()``."""

    def __init__(self, admin: AdminClient, hint: str = "t") -> None:
        self._admin = admin
        self._hint = hint
        self.created: list[str] = []

    def __call__(
        self,
        name: str | None = None,
        partitions: int = 1,
        config: Mapping[str, str] | None = None,
    ) -> str:
        topic = unique_topic_name(name or self._hint)
        create_topic(self._admin, topic, partitions=partitions, config=config)
        self.created.append(topic)
        return topic

    def cleanup(self) -> None:
        delete_topics(self._admin, self.created)
        self.created.clear()
