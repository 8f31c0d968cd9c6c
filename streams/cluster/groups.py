"""Consumer and share groups on a cluster: which exist, their state and members, deleting
them, and the one group setting Streams makes (a share group's start).

``list_groups``, ``describe_group`` and ``delete_groups`` take the ``Cluster`` that asks
and are its methods; ``set_share_offset_reset`` takes the admin client a share worker holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from confluent_kafka import ConsumerGroupState, KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from streams.cluster.errors import ClusterError
from streams.coordinates import TP

if TYPE_CHECKING:
    from streams.cluster.connection import Cluster


@dataclass(frozen=True, slots=True)
class Member:
    """One member of a consumer group and the partitions it holds."""

    member_id: str
    client_id: str
    host: str
    partitions: tuple[TP, ...]
    instance_id: str | None = None  # a static member's group.instance.id


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """A consumer group as the coordinator describes it."""

    group: str
    state: str  # Kafka's names: Empty, Stable, PreparingRebalance, Dead, ...
    members: tuple[Member, ...]

    @property
    def exists(self) -> bool:
        return self.state.lower() not in {"dead", "unknown"}

    @property
    def active(self) -> bool:
        """Members are joined (or joining): Kafka's tool refuses to reset such a group."""
        return self.state.lower() not in {"empty", "dead", "unknown"} or bool(self.members)


_STATE_NAMES = {
    ConsumerGroupState.EMPTY: "Empty",
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.DEAD: "Dead",
    ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
}


def list_groups(cluster: Cluster) -> list[str]:
    """Every consumer group the cluster knows, sorted."""
    cluster.check()
    result = cluster.request(
        "list groups",
        lambda: {"all": cluster.admin.list_consumer_groups(request_timeout=cluster.timeout)},
    )["all"]
    return sorted(g.group_id for g in result.valid)


def describe_group(cluster: Cluster, group: str) -> GroupInfo:
    """State and members of ``group`` (state ``Dead`` when the cluster does not know it)."""
    cluster.check()
    desc = cluster.request(
        f"describe group {group!r}",
        lambda: cluster.admin.describe_consumer_groups([group], request_timeout=cluster.timeout),
    )[group]
    members = tuple(
        Member(
            m.member_id,
            m.client_id,
            m.host,
            tuple(sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions))
            if m.assignment is not None
            else (),
            m.group_instance_id,
        )
        for m in desc.members
    )
    state = _STATE_NAMES.get(desc.state, str(desc.state.name).title())
    return GroupInfo(group, state, members)


def delete_groups(cluster: Cluster, groups: Sequence[str]) -> None:
    """Delete consumer groups ``groups`` with their committed offsets, all or none:
    raises ``ClusterError`` before deleting anything when ``check_deletable`` does."""
    names = check_deletable(cluster, groups)
    if names:
        cluster.request(
            f"delete groups {', '.join(names)}",
            lambda: cluster.admin.delete_consumer_groups(names, request_timeout=cluster.timeout),
        )


def check_deletable(cluster: Cluster, groups: Sequence[str]) -> list[str]:
    """``groups`` without repeats, once each is known to exist and to have no members
    (Kafka refuses to delete a group in use: its consumers are stopped first, as for an
    offset reset); else ``ClusterError`` naming the group."""
    names = list(dict.fromkeys(groups))
    for info in (describe_group(cluster, g) for g in names):
        if not info.exists:
            raise ClusterError(f"no consumer group {info.group!r}; nothing was deleted")
        if info.active:
            members = len(info.members)
            raise ClusterError(
                f"group {info.group!r} is in use ({info.state}, {members} "
                f"member{'' if members == 1 else 's'}): stop its consumers first; "
                "nothing was deleted"
            )
    return names


def set_share_offset_reset(admin: AdminClient, group: str, reset: str, timeout: float) -> None:
    """Set share group ``group``'s ``share.auto.offset.reset`` (``earliest``, ``latest``):
    where a new share group starts is a group setting, not a consumer's. Raises
    ``ClusterError`` when the cluster refuses."""
    entry = ConfigEntry(
        "share.auto.offset.reset", reset, incremental_operation=AlterConfigOpType.SET
    )
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    try:
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(timeout=timeout)
    except KafkaException as exc:
        raise ClusterError(
            f"cannot set share.auto.offset.reset of group {group!r}: {exc.args[0].str()}"
        ) from exc
