"""Consumer-group offsets: show them, plan a reset, and apply it.

A reset is a plan first (``plan_reset``, ``plan_from_offsets``): pure lookups, nothing
moves. ``execute_reset`` applies a plan, after checking again that the group has no
active members (Kafka only accepts commits from outside a group that is empty). The rules
are those of ``kafka-consumer-groups --reset-offsets`` (see ``resolve.py``), so plans are
identical to that tool's, partition for partition.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from streams.cluster import Cluster, GroupInfo, Member
from streams.coordinates import TP
from streams.replay.errors import ActiveGroupError, UnknownGroupError
from streams.replay.internal import by_input
from streams.replay.lookup import partition_states, partitions_for, select
from streams.replay.plan import now_ms
from streams.replay.positions import PositionSpec, TopicSelection
from streams.replay.resolve import PartitionState, clamp, resolve


@dataclass(frozen=True, slots=True)
class OffsetChange:
    """One partition of a reset plan: the committed offset now, and the one planned."""

    topic: str
    partition: int
    current: int | None
    new: int
    log_start: int
    log_end: int


@dataclass(frozen=True, slots=True)
class ResetPlan:
    """Offsets to commit for ``group``, one ``OffsetChange`` per partition, sorted."""

    group: str
    changes: tuple[OffsetChange, ...]

    def offsets(self) -> dict[TP, int]:
        return {(c.topic, c.partition): c.new for c in self.changes}

    def as_dict(self) -> dict[str, object]:
        return {
            "group": self.group,
            "partitions": [
                {"topic": c.topic, "partition": c.partition, "current": c.current, "new": c.new}
                for c in self.changes
            ],
        }


def require_group(cluster: Cluster, group: str, *, allow_new: bool = False) -> GroupInfo:
    """The group's description; ``UnknownGroupError`` when the cluster does not know it
    (unless ``allow_new``: offsets may be set for a group before it first starts)."""
    info = cluster.describe_group(group)
    if not info.exists and not allow_new and not cluster.committed(group):
        raise UnknownGroupError(
            f"consumer group {group!r} does not exist (pass --new-group to set its offsets "
            "before it first starts)"
        )
    return info


def require_inactive(info: GroupInfo) -> None:
    """Raise ``ActiveGroupError`` while the group has members, as Kafka's tool does."""
    if info.active:
        static = sum(1 for m in info.members if m.instance_id)
        why = (
            f"; {static} static (a stopped `streams run --static-membership` instance stays "
            "a member until its session times out, 10 s: wait for it)"
            if static
            else ""
        )
        raise ActiveGroupError(
            f"consumer group {info.group!r} has {len(info.members)} active member(s) "
            f"(state {info.state}){why}: stop its consumers, then reset"
        )


def _changes(
    topic: str, states: Mapping[int, PartitionState], new: Mapping[int, int]
) -> list[OffsetChange]:
    return [
        OffsetChange(topic, p, states[p].committed, new[p], states[p].log_start, states[p].log_end)
        for p in sorted(new)
    ]


def plan_reset(
    cluster: Cluster,
    group: str,
    topics: Sequence[TopicSelection],
    position: PositionSpec,
    *,
    allow_new: bool = False,
    at_ms: int | None = None,
) -> ResetPlan:
    """The offsets ``group`` would get on ``topics`` for ``position``; nothing changes.

    Blocks on broker lookups. Raises ``UnknownGroupError``, ``ActiveGroupError``,
    ``TopicNotFoundError``, ``PositionError`` (a shift where a partition has no commit, a
    time in the future), ``ClusterError``.
    """
    info = require_group(cluster, group, allow_new=allow_new)
    require_inactive(info)
    at = now_ms() if at_ms is None else at_ms
    changes: list[OffsetChange] = []
    for selection in topics:
        partitions = partitions_for(cluster, selection, position)
        wanted = [position.for_partition(p) for p in partitions]
        states = partition_states(cluster, selection.topic, partitions, wanted, at, group=group)
        new = {}
        for p in partitions:
            pos = position.for_partition(p)
            assert pos is not None  # partitions_for checked every partition has one
            new[p] = resolve(pos, states[p], at, f"{selection.topic}:{p}")
        changes += _changes(selection.topic, states, new)
    return ResetPlan(group, tuple(sorted(changes, key=lambda c: (c.topic, c.partition))))


def plan_from_offsets(
    cluster: Cluster, group: str, offsets: Mapping[TP, int], *, allow_new: bool = False
) -> ResetPlan:
    """A plan from explicit offsets (a CSV plan), clamped to each log like Kafka's
    ``--from-file``. Raises like ``plan_reset``."""
    info = require_group(cluster, group, allow_new=allow_new)
    require_inactive(info)
    by_topic: dict[str, dict[int, int]] = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, {})[partition] = offset
    changes: list[OffsetChange] = []
    for topic, wanted in sorted(by_topic.items()):
        partitions = select(cluster, TopicSelection(topic, tuple(sorted(wanted))))
        states = partition_states(cluster, topic, partitions, [], now_ms(), group=group)
        new = {p: clamp(wanted[p], states[p]) for p in partitions}
        changes += _changes(topic, states, new)
    return ResetPlan(group, tuple(changes))


def execute_reset(cluster: Cluster, plan: ResetPlan) -> None:
    """Commit the plan's offsets for its group. Checks again that no member has joined
    since the plan was made; raises ``ActiveGroupError`` or ``ClusterError``."""
    require_inactive(cluster.describe_group(plan.group))
    cluster.alter_committed(plan.group, plan.offsets())


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """One row of ``offsets show``: where the group is in a partition, and how far behind."""

    topic: str
    partition: int
    committed: int | None
    log_end: int | None  # None: the topic no longer exists
    member: str | None
    serves: str | None = None  # the input an internal topic serves (``TopicRole``)
    internal: bool = False

    @property
    def lag(self) -> int | None:
        if self.committed is None or self.log_end is None:
            return None
        return max(self.log_end - self.committed, 0)


@dataclass(frozen=True, slots=True)
class GroupOffsets:
    """A group's state, members, and offsets in every partition it commits to or holds."""

    group: str
    state: str
    members: tuple[Member, ...]
    partitions: tuple[PartitionOffsets, ...]

    @property
    def lag(self) -> int:
        return sum(p.lag or 0 for p in self.partitions)

    def as_dict(self) -> dict[str, object]:
        return {
            "group": self.group,
            "state": self.state,
            "members": [
                {
                    "member_id": m.member_id,
                    "client_id": m.client_id,
                    "host": m.host,
                    "partitions": [f"{t}:{p}" for t, p in m.partitions],
                }
                for m in self.members
            ],
            "partitions": [
                {
                    "topic": p.topic,
                    "partition": p.partition,
                    "committed": p.committed,
                    "log_end": p.log_end,
                    "lag": p.lag,
                    "member": p.member,
                    "serves": p.serves,
                    "internal": p.internal,
                }
                for p in self.partitions
            ],
            "lag": self.lag,
        }


def group_offsets(cluster: Cluster, group: str) -> GroupOffsets:
    """Committed offset, log end and lag per partition, and members, of ``group``.

    Log ends are read-uncommitted (as Kafka's ``--describe``); each input comes before
    the internal topics that serve it (``by_input``). Raises ``UnknownGroupError`` for a
    group the cluster does not know.
    """
    info = cluster.describe_group(group)
    committed = cluster.committed(group)
    if not info.exists and not committed:
        raise UnknownGroupError(f"consumer group {group!r} does not exist")
    owner = {tp: m.client_id or m.member_id for m in info.members for tp in m.partitions}
    held = set(committed) | set(owner)
    roles = {r.topic: (i, r) for i, r in enumerate(by_input(group, {t for t, _ in held}))}
    tps = sorted(held, key=lambda tp: (roles[tp[0]][0], tp[1]))
    existing = cluster.topics()  # commits may outlive their topic: shown without a log end
    ends = cluster.list_offsets([tp for tp in tps if tp[0] in existing], "latest")
    rows = tuple(
        PartitionOffsets(
            t, p, committed.get((t, p)), ends.get((t, p)), owner.get((t, p)),
            roles[t][1].serves, roles[t][1].internal,
        )
        for t, p in tps
    )  # fmt: skip
    return GroupOffsets(group, info.state, info.members, rows)
