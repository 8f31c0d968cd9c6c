"""Consumer lag per group and topic: how many records each group has yet to process.

Lag of a partition is its log end offset (read-uncommitted, as Kafka's
``--describe``) minus the group's committed offset; a topic's lag is the sum over the
partitions the group has committed. One ListOffsets request covers every group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from streams.coordinates import TP
from streams.replay.cluster import Cluster, GroupInfo
from streams.replay.errors import UnknownGroupError


@dataclass(frozen=True, slots=True)
class TopicLag:
    """One group's lag on one topic."""

    group: str
    topic: str
    state: str
    members: int
    partitions: int  # partitions the group has committed offsets for
    lag: int
    max_partition_lag: int

    def as_dict(self) -> dict[str, object]:
        return {
            "group": self.group,
            "topic": self.topic,
            "state": self.state,
            "members": self.members,
            "partitions": self.partitions,
            "lag": self.lag,
            "max_partition_lag": self.max_partition_lag,
        }


def lag(cluster: Cluster, groups: Sequence[str] | None = None) -> list[TopicLag]:
    """Lag per (group, topic), sorted, for ``groups`` (default: every consumer group).

    Blocks on a few broker requests; raises ``UnknownGroupError`` for a named group the
    cluster does not know, ``ClusterError`` when it cannot be reached.
    """
    names = list(groups) if groups else cluster.groups()
    infos: dict[str, GroupInfo] = {}
    commits: dict[str, dict[TP, int]] = {}
    for name in names:
        infos[name] = cluster.describe_group(name)
        commits[name] = cluster.committed(name)
        if groups and not infos[name].exists and not commits[name]:
            raise UnknownGroupError(f"consumer group {name!r} does not exist")
    existing = cluster.topics()  # a group may hold commits for a deleted topic: skip those
    everything = sorted({tp for c in commits.values() for tp in c if tp[0] in existing})
    ends = cluster.list_offsets(everything, "latest")
    rows = []
    for name in names:
        per_topic: dict[str, list[int]] = {}
        for (topic, partition), committed in commits[name].items():
            if topic not in existing:
                continue
            per_topic.setdefault(topic, []).append(max(ends[(topic, partition)] - committed, 0))
        info = infos[name]
        for topic, lags in sorted(per_topic.items()):
            rows.append(
                TopicLag(
                    name, topic, info.state, len(info.members), len(lags), sum(lags), max(lags)
                )
            )
    return rows


def over_threshold(rows: Sequence[TopicLag], threshold: int) -> list[TopicLag]:
    """The rows whose lag is strictly above ``threshold``."""
    return [r for r in rows if r.lag > threshold]
