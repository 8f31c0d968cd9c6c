"""Consumer lag per group and topic: how many records each group has yet to process.

Lag of a partition is its last stable offset (its end as a read-committed consumer, as
every Streams app is, sees it) minus the group's committed offset; a topic's lag is the
sum over the partitions the group has committed. One ListOffsets request covers every
group. A partition written in transactions ends in a commit marker, an offset no
consumer ever gets: a group past the last record it can read is caught up, lag 0, though
the marker lies beyond its committed offset.

Time lag is how far behind in time: the seconds between now and the timestamp of the
oldest record a group has yet to process (the record at its committed offset), the
largest over a topic's partitions; 0 when caught up, None when that record could not be
read in time. The records are read by one read-committed consumer assigned at the
committed offsets (one fetch per lagging partition, all within the cluster's timeout);
the same fetch finds a partition with only markers left (its end, no record).

A group's rows list each input, then the internal topics that serve it (``by_input``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from streams.cluster import Cluster, GroupInfo
from streams.coordinates import TP
from streams.replay.errors import UnknownGroupError
from streams.replay.internal import by_input


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
    time_lag_s: float | None = 0.0  # the oldest unprocessed record's age (None: unread)
    serves: str | None = None  # the input an internal topic serves (``TopicRole``)
    internal: bool = False

    def as_dict(self) -> dict[str, object]:
        return {
            "group": self.group,
            "topic": self.topic,
            "state": self.state,
            "members": self.members,
            "partitions": self.partitions,
            "lag": self.lag,
            "max_partition_lag": self.max_partition_lag,
            "time_lag_s": self.time_lag_s,
            "serves": self.serves,
            "internal": self.internal,
        }


def caught_up(cluster: Cluster, group: str, topics: Sequence[str]) -> bool:
    """Whether ``group`` has committed the end of every partition of ``topics``: all that
    was written there so far is processed (a partition with no record left counts as
    read). Raises ``TopicNotFoundError`` and ``ClusterError`` as ``Cluster`` does."""
    partitions = [(t, p) for t in topics for p in range(cluster.partition_count(t))]
    ends = cluster.list_offsets(partitions, "latest")
    starts = cluster.list_offsets(partitions, "earliest")
    committed = cluster.committed(group, partitions)
    return all(committed.get(tp, starts[tp]) >= ends[tp] for tp in partitions)


def lag(cluster: Cluster, groups: Sequence[str] | None = None) -> list[TopicLag]:
    """Lag per (group, topic) for ``groups`` (default: every consumer group), by group,
    each input before the internal topics that serve it.

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
    ends = cluster.list_offsets(everything, "latest", read_committed=True)
    behind = {
        (name, tp): committed
        for name in names
        for tp, committed in commits[name].items()
        if tp[0] in existing and ends[tp] > committed
    }
    times = _record_times(cluster, set(behind.items()))
    now_ms = time.time() * 1000
    rows = []
    for name in names:
        per_topic: dict[str, list[int]] = {}
        ages: dict[str, list[float | None]] = {}
        for tp, committed in commits[name].items():
            topic = tp[0]
            if topic not in existing:
                continue
            read = times.get((tp, committed), _UNREAD)
            if (name, tp) not in behind or read is None:  # None: only markers are left
                per_topic.setdefault(topic, []).append(0)
                continue
            per_topic.setdefault(topic, []).append(ends[tp] - committed)
            age = round(max(now_ms - read, 0) / 1000, 3) if read != _UNREAD else None
            ages.setdefault(topic, []).append(age)
        info = infos[name]
        for role in by_input(name, per_topic):
            topic, lags = role.topic, per_topic[role.topic]
            known = [a for a in ages.get(topic, []) if a is not None]
            time_lag = max(known) if known else (None if ages.get(topic) else 0.0)
            rows.append(
                TopicLag(
                    name,
                    topic,
                    info.state,
                    len(info.members),
                    len(lags),
                    sum(lags),
                    max(lags),
                    time_lag,
                    role.serves,
                    role.internal,
                )
            )
    return rows


_UNREAD = -1  # the record a group is behind at could not be read in time


def _record_times(
    cluster: Cluster, behind: set[tuple[tuple[str, TP], int]]
) -> dict[tuple[TP, int], int | None]:
    """The timestamp of the record at each (partition, offset) some group is behind at,
    None where no record is left before the end (``Cluster.record_times``): groups at the
    same offset share one read; a partition is read once per round, so groups at
    different offsets of one partition take a round each."""
    pending = sorted({(tp, offset) for (_group, tp), offset in behind})
    found: dict[tuple[TP, int], int | None] = {}
    while pending:
        now: dict[TP, int] = {}
        later = []
        for tp, offset in pending:
            if tp in now:
                later.append((tp, offset))
            else:
                now[tp] = offset
        for tp, ms in cluster.record_times(now).items():
            found[(tp, now[tp])] = ms
        pending = later
    return found


def over_threshold(rows: Sequence[TopicLag], threshold: int) -> list[TopicLag]:
    """The rows whose lag is strictly above ``threshold``."""
    return [r for r in rows if r.lag > threshold]
