"""Topic names a topology owns, derived from its app id (never typed by hand).

One app id scopes everything an app owns: ``<app>-<name>`` for owned outputs (here),
``<app>-<store>-changelog`` (``streams.state.changelog``), ``<app>-<topic>-retry-<n>`` and
``<app>-<topic>-dlq`` (``streams.failures.topics``). ``Topology.with_app_id`` moves them all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LEGAL = re.compile(r"^[A-Za-z0-9._-]+$")
MAX_TOPIC_LENGTH = 249


def check_app_id(app_id: str) -> str | None:
    """Why ``app_id`` cannot scope topic names and a consumer group, or None when it can."""
    if not app_id:
        return "the app id is empty"
    if not _LEGAL.match(app_id):
        return f"app id {app_id!r} may only use letters, digits, '.', '_' and '-'"
    if len(app_id) > 200:
        return f"app id {app_id!r} is longer than 200 characters"
    return None


def check_topic(topic: str) -> str | None:
    """Why ``topic`` is not a legal Kafka topic name, or None when it is."""
    if not topic or topic in {".", ".."}:
        return f"topic name {topic!r} is not allowed"
    if not _LEGAL.match(topic):
        return f"topic name {topic!r} may only use letters, digits, '.', '_' and '-'"
    if len(topic) > MAX_TOPIC_LENGTH:
        return f"topic name {topic[:40]!r}... is longer than {MAX_TOPIC_LENGTH} characters"
    return None


def owned_topic(app_id: str, name: str) -> str:
    return f"{app_id}-{name}"


@dataclass(frozen=True, slots=True)
class Owned:
    """A topic the topology owns, named ``<app>-<name>`` once the app id is known.

    Use it for sinks: ``stream.to(owned("accepted"), ...)``. Owned topics are created by
    ``streams run`` when missing, and a new app id gives a fresh set of them.
    """

    name: str

    def resolve(self, app_id: str) -> str:
        return owned_topic(app_id, self.name)

    def __str__(self) -> str:
        return f"<app>-{self.name}"


def owned(name: str) -> Owned:
    """A topic owned by the topology: ``<app id>-<name>``."""
    return Owned(name)


TopicRef = str | Owned


def resolve_topic(ref: TopicRef, app_id: str) -> str:
    return ref.resolve(app_id) if isinstance(ref, Owned) else ref
