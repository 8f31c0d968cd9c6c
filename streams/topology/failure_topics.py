"""The topics failure routing needs for each input of a topology: fewer is better.

Every input gets its DLQ, ``<app>-<topic>-dlq``: a record that cannot be decoded goes
there whatever the policy (even one of our own repartition topics: anyone can write to a
topic), so nothing is dropped silently and a poison record never stalls its partition.

Retry tiers (``<app>-<topic>-retry-<n>``) and a waiting room (the store
``<topic>-waiting``) only for an input that has a node a failure in is retried:
``Topology.input_retry``, from ``Topology.retry_for``. User functions are retried under
the topology's or their own policy; sinks and aggregations, with the nodes their updates
feed, never are (``Topology.never_retried``), and decoding errors go to the DLQ at once.
So a count over a repartition topic gets a DLQ and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from streams.failures.policy import RetryPolicy
from streams.failures.topics import FailureTopics, topic_stem

if TYPE_CHECKING:
    from streams.topology.topology import Topology


def failure_topics(topology: Topology) -> list[FailureTopics]:
    """The retry tiers (none for an input never retried) and DLQ of each input."""
    return [
        FailureTopics.for_input(
            topology.app_id, topic, topology.input_retry(topic) or RetryPolicy.no_retries()
        )
        for topic in topology.topics_read
    ]


def retried_inputs(topology: Topology) -> list[str]:
    """The inputs with retry tiers, whose keys keep their order in a waiting room."""
    return [t.topic for t in failure_topics(topology) if t.retries]


def shared_stems(app_id: str, topics: Iterable[str]) -> list[str]:
    """Why inputs ``topics`` cannot each have failure topics of their own under
    ``app_id``: ``x`` and ``<app>-x`` would share theirs (``topic_stem``)."""
    seen: dict[str, str] = {}
    problems = []
    for topic in topics:
        stem = topic_stem(app_id, topic)
        if stem in seen:
            problems.append(
                f"inputs {seen[stem]!r} and {topic!r} would share the retry and dead-letter "
                f"topics {app_id}-{stem}-...: rename one, or run under another app id"
            )
        seen.setdefault(stem, topic)
    return problems
