"""List, describe, create and delete topics: what ``streams topics`` shows and does.

Every function blocks for at most a few ``Cluster.timeout`` periods and raises a
``ClusterError`` (``streams.cluster``) with a one-line message: for a cluster that cannot
be reached, ``TopicNotFoundError`` for a topic it lacks, ``TopicExistsError``/``TopicError``
for a creation or deletion the broker refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka.admin import ConfigSource  # type: ignore[attr-defined]

from streams.cluster import Cluster, TopicExistsError, TopicNotFoundError
from streams.config import parse_key_values

INTERNAL_PREFIX = "__"  # Kafka's own topics: __consumer_offsets, __transaction_state, ...

# Where a config's value comes from, in words (the topic's own settings first).
# (confluent-kafka gives ``ConfigEntry.source`` as the enum's int value.)
_SOURCES = {
    ConfigSource.DYNAMIC_TOPIC_CONFIG.value: "topic",
    ConfigSource.DYNAMIC_BROKER_CONFIG.value: "broker",
    ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value: "cluster default",
    ConfigSource.STATIC_BROKER_CONFIG.value: "broker file",
}
_TOPIC = ConfigSource.DYNAMIC_TOPIC_CONFIG.value
_DEFAULT = ConfigSource.DEFAULT_CONFIG.value


@dataclass(frozen=True, slots=True)
class TopicSummary:
    """One line of ``topics list``."""

    name: str
    partitions: int
    replication_factor: int
    internal: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.name,
            "partitions": self.partitions,
            "replication_factor": self.replication_factor,
            "internal": self.internal,
        }


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """A partition: its leader, replicas, in-sync replicas and log bounds (``records``
    counts offsets, an upper bound: compaction and transaction markers leave gaps)."""

    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    start: int
    end: int

    @property
    def records(self) -> int:
        return max(self.end - self.start, 0)

    def as_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "leader": self.leader,
            "replicas": list(self.replicas),
            "isr": list(self.isr),
            "start_offset": self.start,
            "end_offset": self.end,
            "records": self.records,
        }


@dataclass(frozen=True, slots=True)
class ConfigSetting:
    """A config whose value is not Kafka's default, and where that value comes from
    (``topic`` for the topic's own settings). Secrets have no value."""

    name: str
    value: str | None
    source: str


@dataclass(frozen=True, slots=True)
class TopicDescription:
    """What ``topics describe`` shows."""

    name: str
    partitions: tuple[PartitionInfo, ...]
    configs: tuple[ConfigSetting, ...]

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0

    @property
    def records(self) -> int:
        return sum(p.records for p in self.partitions)

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.name,
            "partitions": [p.as_dict() for p in self.partitions],
            "replication_factor": self.replication_factor,
            "records": self.records,
            "configs": {c.name: {"value": c.value, "source": c.source} for c in self.configs},
        }


def is_internal(name: str) -> bool:
    return name.startswith(INTERNAL_PREFIX)


def list_topics(cluster: Cluster, *, internal: bool = False) -> list[TopicSummary]:
    """Every topic by name, with partitions and replication factor; Kafka's internal
    ``__*`` topics only when ``internal``."""
    rows = []
    for name, meta in sorted(cluster.topic_metadata().items()):
        if meta.error is not None or (is_internal(name) and not internal):
            continue
        parts = list(meta.partitions.values())
        rf = len(parts[0].replicas) if parts else 0
        rows.append(TopicSummary(name, len(parts), rf, is_internal(name)))
    return rows


def describe_topic(cluster: Cluster, name: str) -> TopicDescription:
    """Partitions (leader, replicas, ISR, start and end offsets) and the configs not at
    Kafka's default. Raises ``TopicNotFoundError``."""
    meta = cluster.topic_metadata(name)[name]
    numbers = sorted(meta.partitions)
    tps = [(name, p) for p in numbers]
    starts = cluster.list_offsets(tps, "earliest")
    ends = cluster.list_offsets(tps, "latest")
    partitions = tuple(
        PartitionInfo(
            p,
            meta.partitions[p].leader,
            tuple(meta.partitions[p].replicas),
            tuple(meta.partitions[p].isrs),
            starts[(name, p)],
            ends[(name, p)],
        )
        for p in numbers
    )
    configs = tuple(
        ConfigSetting(e.name, None if e.is_sensitive else e.value, _SOURCES.get(e.source, "other"))
        for e in sorted(cluster.topic_configs(name), key=_config_order)
        if not e.is_default and e.source != _DEFAULT
    )
    return TopicDescription(name, partitions, configs)


def _config_order(entry: Any) -> tuple[bool, str]:
    # the topic's own settings first, then what it inherits from the cluster
    return entry.source != _TOPIC, entry.name


def parse_topic_configs(items: Iterable[str]) -> dict[str, str]:
    """``KEY=VALUE`` items of ``--topic-config`` as a dict (the same parser as ``-X``)."""
    return parse_key_values(list(items), "--topic-config")


def create(
    cluster: Cluster,
    name: str,
    *,
    partitions: int = 1,
    replication_factor: int = -1,
    configs: Mapping[str, str] | None = None,
    if_not_exists: bool = False,
) -> bool:
    """Create ``name`` and wait until every broker serves it. Returns False when it
    existed already and ``if_not_exists``; raises ``TopicExistsError`` without it."""
    try:
        return cluster.create_topic(
            name,
            partitions,
            configs,
            exist_ok=if_not_exists,
            replication_factor=replication_factor,
        )
    except TopicExistsError as exc:
        raise TopicExistsError(f"{exc} (--if-not-exists accepts that)") from None


def missing_topics(cluster: Cluster, names: Sequence[str]) -> list[str]:
    """Those of ``names`` the cluster does not have, in the order given."""
    existing = cluster.topics()
    return [n for n in names if n not in existing]


def deletable(cluster: Cluster, names: Sequence[str], *, if_exists: bool = False) -> list[str]:
    """Those of ``names`` that ``delete`` would delete, once each. A name the cluster lacks
    raises ``TopicNotFoundError`` unless ``if_exists``."""
    missing = missing_topics(cluster, names)
    if missing and not if_exists:
        which = ", ".join(repr(n) for n in missing)
        what = f"topic {which} does" if len(missing) == 1 else f"topics {which} do"
        raise TopicNotFoundError(f"{what} not exist (nothing was deleted)")
    return [n for n in dict.fromkeys(names) if n not in missing]


def delete(cluster: Cluster, names: Sequence[str], *, if_exists: bool = False) -> list[str]:
    """Delete ``names`` and wait until the metadata no longer shows them; returns those
    deleted. A name the cluster lacks raises ``TopicNotFoundError`` (before anything is
    deleted) unless ``if_exists``."""
    doomed = deletable(cluster, names, if_exists=if_exists)
    cluster.delete_topics(doomed)
    return doomed
