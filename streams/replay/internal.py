"""Which input an app's internal topics serve, so ``lag`` and ``offsets show`` list each
input with its internal topics under it.

A topology's consumer group is its app id, so the topics a group commits on tell its
internal topics apart by name: retry tiers ``<app>-<stem>-retry-<n>`` and DLQs
``<app>-<stem>-dlq`` of the topic with that stem (``streams.failures.topics``), and
repartition topics ``<app>-<node>-repartition``. A repartition topic carries records of
every input upstream of it, so it serves no single one: it is listed under the only input
when there is one, else on its own (``internal``). Any other topic is an input (an
owned topic read back, ``<app>-x``, too). Names only: no broker is asked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from streams.failures.topics import topic_stem

_TIER = re.compile(r"(.+)-retry-([1-9][0-9]*)")
_DLQ_SUFFIX = "-dlq"
_REPARTITION_SUFFIX = "-repartition"


@dataclass(frozen=True, slots=True)
class TopicRole:
    """A topic of a group as ``lag`` and ``offsets show`` list it."""

    topic: str
    serves: str | None  # the topic an internal one serves; None: an input, or on its own
    internal: bool


def serves_label(serves: str | None, internal: bool) -> str:
    """The ``serves`` column of a table: empty for an input, ``internal`` for an internal
    topic that serves no single input."""
    return (serves or "internal") if internal else ""


def _served(app_id: str, topic: str) -> tuple[str, tuple[int, int]] | None:
    """The stem the internal ``topic`` derives from and its rank under it (retry tiers
    by number, then the DLQ), or None when ``topic`` is no retry tier or DLQ."""
    rest = topic.removeprefix(f"{app_id}-")
    if rest == topic:
        return None
    tier = _TIER.fullmatch(rest)
    if tier:
        return tier[1], (0, int(tier[2]))
    if rest.endswith(_DLQ_SUFFIX) and len(rest) > len(_DLQ_SUFFIX):
        return rest.removesuffix(_DLQ_SUFFIX), (1, 0)
    return None


def _repartition(app_id: str, topic: str) -> bool:
    return topic.startswith(f"{app_id}-") and topic.endswith(_REPARTITION_SUFFIX)


def by_input(app_id: str, topics: Iterable[str]) -> list[TopicRole]:
    """``topics`` of group ``app_id`` in listing order: each input (sorted), then the
    internal topics that serve it (its retry tiers by number, its DLQ, a repartition
    topic of the only input and that one's own tiers), then the repartition topics that
    serve no single input, each with its tiers. A group that is no app's has no
    ``<app>-`` topics: its topics come back sorted, all inputs."""
    names = sorted(set(topics))
    by_stem = {topic_stem(app_id, t): t for t in names if _served(app_id, t) is None}
    under: dict[str, list[tuple[tuple[int, int], str]]] = {}
    for t in names:
        served = _served(app_id, t)
        if served is not None:
            stem, rank = served
            parent = by_stem.get(stem) or (
                f"{app_id}-{stem}" if stem.endswith(_REPARTITION_SUFFIX) else stem
            )
            under.setdefault(parent, []).append((rank, t))
    listed = set(by_stem.values())
    inputs = [t for t in listed if not _repartition(app_id, t)]
    shared = sorted(t for t in listed if _repartition(app_id, t))
    if len(inputs) == 1:
        under.setdefault(inputs[0], []).extend(((2, 0), t) for t in shared)
        shared = []
    # Tiers of a topic the group has no commit on are listed where that topic would be.
    heads = sorted(set(inputs) | (under.keys() - set(names) - set(shared)))
    roles: list[TopicRole] = []

    def add(topic: str, serves: str | None, internal: bool) -> None:
        if topic in listed or internal:
            roles.append(TopicRole(topic, serves, internal))
        for _rank, child in sorted(under.get(topic, [])):
            add(child, topic, True)

    for head in heads:
        add(head, None, False)
    for topic in shared:
        add(topic, None, True)
    return roles
