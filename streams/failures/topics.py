"""Derived names of the retry and dead-letter topics, and their creation.

Names are never typed by hand: ``<app>-<topic>-retry-<n>`` (n from 1) and
``<app>-<topic>-dlq``, where a ``<topic>`` the app owns already (it starts with
``<app>-``: a repartition topic, an owned output read back) is not prefixed again
(``topic_stem``). Each is created with the input topic's partition count, so a record
keeps its partition number (and its key's co-partitioning) through retries.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from streams.cluster import TopicError, Topics
from streams.failures.errors import FailureTopicError
from streams.failures.policy import RetryPolicy

_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
_MAX_TOPIC_LENGTH = 249
_RETRY_SUFFIX = re.compile(r"-retry-([1-9][0-9]*)$")


def _checked(name: str) -> str:
    if len(name) > _MAX_TOPIC_LENGTH or not _LEGAL.match(name):
        raise FailureTopicError(
            f"derived topic name {name!r} is not a legal Kafka topic name "
            f"(letters, digits, '.', '_', '-'; at most {_MAX_TOPIC_LENGTH} characters)"
        )
    return name


def topic_stem(app_id: str, topic: str) -> str:
    """What follows ``<app>-`` in the names ``app_id`` derives from ``topic``: ``topic``
    without its ``<app>-`` prefix (``topic`` itself when it has none), so the retry tiers
    of ``shop-rekeyed`` under app ``shop`` are ``shop-rekeyed-retry-<n>``, not
    ``shop-shop-rekeyed-retry-<n>``. Inputs ``x`` and ``<app>-x`` share a stem: a
    topology reading both is refused (``streams.topology.failure_topics.shared_stems``)."""
    prefix = f"{app_id}-"
    return topic[len(prefix) :] if topic.startswith(prefix) and len(topic) > len(prefix) else topic


def retry_topic(app_id: str, topic: str, tier: int) -> str:
    """``<app>-<topic>-retry-<tier>`` (``topic_stem``); tiers count from 1."""
    if tier < 1:
        raise FailureTopicError(f"retry tiers count from 1, got {tier}")
    return _checked(f"{app_id}-{topic_stem(app_id, topic)}-retry-{tier}")


def dlq_topic(app_id: str, topic: str) -> str:
    """``<app>-<topic>-dlq`` (``topic_stem``)."""
    return _checked(f"{app_id}-{topic_stem(app_id, topic)}-dlq")


def retry_tier_of(app_id: str, topic: str, name: str) -> int | None:
    """The tier number when ``name`` is a retry topic of ``app_id``/``topic``, else None."""
    prefix = f"{app_id}-{topic_stem(app_id, topic)}"
    if not name.startswith(prefix):
        return None
    match = _RETRY_SUFFIX.fullmatch(name[len(prefix) :])
    return int(match.group(1)) if match else None


@dataclass(frozen=True, slots=True)
class FailureTopics:
    """The retry tiers and the DLQ that belong to one input topic of one app."""

    app_id: str
    topic: str
    retries: tuple[str, ...]
    dlq: str

    @classmethod
    def for_input(cls, app_id: str, topic: str, policy: RetryPolicy) -> FailureTopics:
        return cls(
            app_id=app_id,
            topic=topic,
            retries=tuple(retry_topic(app_id, topic, n) for n in range(1, policy.tiers + 1)),
            dlq=dlq_topic(app_id, topic),
        )

    @property
    def all(self) -> tuple[str, ...]:
        return (*self.retries, self.dlq)

    def retry(self, tier: int) -> str:
        if not 1 <= tier <= len(self.retries):
            raise FailureTopicError(f"{self.topic!r} has no retry tier {tier}")
        return self.retries[tier - 1]


DLQ_CONFIG = {"retention.ms": "-1"}
"""A DLQ keeps its records until someone deletes them: expiry would drop them silently."""


def ensure_failure_topics(
    cluster: Topics,
    topics: FailureTopics,
    *,
    retry_config: Mapping[str, str] | None = None,
    dlq_config: Mapping[str, str] | None = None,
) -> FailureTopics:
    """Create the retry tiers and the DLQ of ``topics.topic`` with its partition count
    (and ``cluster``'s replication factor: a DLQ outlives a broker's loss on a cluster).

    The DLQ gets ``DLQ_CONFIG`` (no time-based expiry) under ``dlq_config``; retry tiers
    get the broker defaults under ``retry_config``. Blocks until the controller confirms.
    Existing topics are kept when their partition count matches; a mismatch raises
    ``FailureTopicError`` (records would change partition, and per-key order through
    retries would be lost).
    """
    try:
        partitions = cluster.partition_count(topics.topic)
        for name in topics.all:
            config = {**DLQ_CONFIG, **(dlq_config or {})} if name == topics.dlq else retry_config
            cluster.ensure(name, partitions, config)
            found = cluster.partition_count(name)
            if found != partitions:
                raise FailureTopicError(
                    f"topic {name!r} has {found} partitions but its input {topics.topic!r} "
                    f"has {partitions}: delete it or give it the same count"
                )
    except TopicError as exc:
        raise FailureTopicError(str(exc)) from exc
    return topics
