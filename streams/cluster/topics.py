"""Topics on a cluster: create (with the cluster's replication factor), delete, size.

Every call blocks until the broker answered, up to ``timeout`` seconds a request.
``create_topic`` returns only once the metadata shows the topic with a leader for every
partition. ``topic_metadata`` is the one lookup of a topic (``partition_count``,
``Topics`` and ``Cluster`` all ask through it): ``TopicNotFoundError`` for a topic that is
not there, ``TopicError`` when the cluster cannot be asked. ``Topics`` is what a running app holds:
the admin client, the replication factor it asks for, and one WARNING per existing topic
that has fewer replicas than that.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import ConfigResource
from confluent_kafka.cimpl import NewTopic

from streams.cluster.errors import TopicError, TopicExistsError, TopicNotFoundError
from streams.logs import get_logger

log = get_logger(__name__)

DEFAULT_REPLICATION = -1
"""A ``replication_factor`` that takes the cluster's ``default.replication.factor``."""

_UNKNOWN = frozenset((KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC))


def create_topic(
    admin: AdminClient,
    name: str,
    partitions: int = 1,
    config: Mapping[str, str] | None = None,
    *,
    exist_ok: bool = False,
    timeout: float = 30.0,
    replication_factor: int = DEFAULT_REPLICATION,
) -> bool:
    """Create ``name`` and wait until the broker's metadata shows it with every leader.

    The controller confirms a creation before every broker knows the topic; waiting for the
    metadata means a producer or consumer started next never sees "unknown topic". With
    ``exist_ok``, a topic another client has just created is waited for the same way.
    ``replication_factor`` -1 (the default) takes the cluster's
    ``default.replication.factor``: on a three-node cluster a topic made without a count
    survives the loss of a node. Returns False when the topic existed already
    (``exist_ok``); raises ``TopicExistsError`` for that without ``exist_ok``,
    ``TopicError`` for other refusals (e.g. more replicas than live brokers).
    """
    topic = NewTopic(
        name,
        num_partitions=partitions,
        replication_factor=replication_factor,
        config=dict(config or {}),
    )
    future = admin.create_topics([topic], operation_timeout=timeout, request_timeout=timeout)[name]
    created = True
    try:
        future.result(timeout=timeout)
    except KafkaException as exc:
        err: KafkaError = exc.args[0]
        if err.code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise TopicError(f"cannot create topic {name!r}: {err.str()}") from exc
        if not exist_ok:
            raise TopicExistsError(f"topic {name!r} already exists") from exc
        created = False
    _wait_metadata(admin, [name], present=True, timeout=timeout)
    return created


def partition_count(admin: AdminClient, name: str, timeout: float = 30.0) -> int:
    """The partition count of topic ``name`` (see ``topic_metadata``)."""
    return len(topic_metadata(admin, name, timeout).partitions)


def topic_metadata(admin: AdminClient, name: str, timeout: float = 30.0) -> Any:
    """confluent-kafka's ``TopicMetadata`` of ``name`` (partitions with leader, replicas,
    ISR). Raises ``TopicNotFoundError`` when it does not exist, ``TopicError`` when the
    cluster does not answer or gives another error for it."""
    try:
        metadata = admin.list_topics(name, timeout=timeout)
    except KafkaException as exc:
        raise TopicError(f"cannot describe topic {name!r}: {exc.args[0].str()}") from exc
    info = metadata.topics.get(name)
    if (
        info is None
        or not info.partitions
        or (info.error is not None and info.error.code() in _UNKNOWN)
    ):
        raise TopicNotFoundError(f"topic {name!r} does not exist")
    if info.error is not None:
        raise TopicError(f"cannot describe topic {name!r}: {info.error.str()}")
    return info


def topic_configs(admin: AdminClient, name: str, timeout: float = 30.0) -> dict[str, Any]:
    """confluent-kafka's ``ConfigEntry`` (name, value, source, is_default, is_sensitive) of
    every config of topic ``name``, by name. Raises ``TopicNotFoundError`` and
    ``TopicError``."""
    return _configs(admin, ConfigResource(ConfigResource.Type.TOPIC, name), timeout)


def _configs(admin: AdminClient, resource: ConfigResource, timeout: float) -> dict[str, Any]:
    what = f"{resource.restype.name.lower()} {resource.name!r}"
    try:
        future = admin.describe_configs([resource], request_timeout=timeout)[resource]
        return dict(future.result(timeout=timeout))
    except KafkaException as exc:
        err: KafkaError = exc.args[0]
        if err.code() in _UNKNOWN:
            raise TopicNotFoundError(f"topic {resource.name!r} does not exist") from exc
        raise TopicError(f"cannot read the configs of {what}: {err.str()}") from exc


def delete_topics(admin: AdminClient, names: Iterable[str], timeout: float = 30.0) -> None:
    """Delete ``names``; topics that are already gone are not an error."""
    names = list(names)
    if not names:
        return
    futures = admin.delete_topics(names, operation_timeout=timeout, request_timeout=timeout)
    for name, future in futures.items():
        try:
            future.result(timeout=timeout)
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            if err.code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise TopicError(f"cannot delete topic {name!r}: {err.str()}") from exc
    _wait_metadata(admin, names, present=False, timeout=timeout)


def delete_app_topics(admin: AdminClient, app_id: str, timeout: float = 30.0) -> list[str]:
    """Delete every topic named ``<app_id>-...``: what an app made (outputs, changelogs,
    retry tiers, DLQs, repartition topics). Returns their names."""
    prefix = f"{app_id}-"
    names = [t for t in admin.list_topics(timeout=timeout).topics if t.startswith(prefix)]
    delete_topics(admin, names, timeout)
    return names


def _wait_metadata(admin: AdminClient, names: list[str], *, present: bool, timeout: float) -> None:
    """Poll metadata until every topic in ``names`` is (or is no longer) served."""
    deadline = time.monotonic() + timeout
    while True:
        topics = admin.list_topics(timeout=timeout).topics
        if present:
            done = all(
                n in topics
                and topics[n].error is None
                and topics[n].partitions
                and all(p.leader >= 0 for p in topics[n].partitions.values())
                for n in names
            )
        else:
            done = not any(n in topics for n in names)
        if done:
            return
        if time.monotonic() > deadline:
            state = "appear" if present else "disappear"
            raise TopicError(f"topics {names} did not {state} in metadata within {timeout:.0f} s")
        time.sleep(0.05)


@dataclass
class Topics:
    """The topics one app (or tool) creates and sizes, all with one replication factor.

    ``replication_factor`` -1 (the default) is the cluster's ``default.replication.factor``.
    ``ensure`` creates a missing topic with it; an existing topic with fewer replicas than
    that is kept as it is and named in one WARNING (per topic, per ``Topics``): it works,
    but a broker's loss takes its partitions offline.
    """

    admin: AdminClient
    replication_factor: int = DEFAULT_REPLICATION
    timeout: float = 30.0
    _wanted: int | None = field(default=None, init=False, repr=False)
    _warned: set[str] = field(default_factory=set, init=False, repr=False)
    # What this door created, and with how many partitions: on a cluster the broker that
    # answers the next metadata request may not know a topic created a moment before.
    _created: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    def partition_count(self, name: str) -> int:
        """See the module's ``partition_count`` (a topic created here: as created)."""
        created = self._created.get(name)
        return created if created is not None else partition_count(self.admin, name, self.timeout)

    def configs(self, name: str) -> dict[str, Any]:
        """See the module's ``topic_configs``."""
        return topic_configs(self.admin, name, self.timeout)

    def ensure(self, name: str, partitions: int, config: Mapping[str, str] | None = None) -> bool:
        """Create ``name`` with ``partitions`` partitions unless it exists; True when it
        was created. Raises ``TopicError`` when the cluster refuses."""
        try:
            info = topic_metadata(self.admin, name, self.timeout)
        except TopicNotFoundError:
            created = create_topic(
                self.admin,
                name,
                partitions,
                config,
                exist_ok=True,  # another instance may create it first
                timeout=self.timeout,
                replication_factor=self.replication_factor,
            )
            if created:
                self._created[name] = partitions
            return created
        self._check_replicas(name, info)
        return False

    def wanted_replicas(self) -> int:
        """The replication factor new topics get: the one asked for, else the cluster's."""
        if self._wanted is None:
            self._wanted = (
                self.replication_factor
                if self.replication_factor > 0
                else default_replication_factor(self.admin, self.timeout)
            )
        return self._wanted

    def _check_replicas(self, name: str, info: Any) -> None:
        if name in self._warned:
            return
        found = min(len(p.replicas) for p in info.partitions.values())
        wanted = self.wanted_replicas()
        if found < wanted:
            self._warned.add(name)
            log.warning(
                "topic has fewer replicas than asked; a broker's loss takes its partitions "
                "offline (recreate it, or add replicas with kafka-reassign-partitions)",
                topic=name,
                replicas=found,
                replication_factor=wanted,
            )


def default_replication_factor(admin: AdminClient, timeout: float = 30.0) -> int:
    """The cluster's ``default.replication.factor`` (as one of its brokers reports it)."""
    try:
        broker = str(min(admin.list_topics(timeout=timeout).brokers))
    except (KafkaException, ValueError) as exc:
        raise TopicError(f"cannot read the cluster's default.replication.factor: {exc}") from exc
    configs = _configs(admin, ConfigResource(ConfigResource.Type.BROKER, broker), timeout)
    entry = configs.get("default.replication.factor")
    return int(entry.value) if entry is not None and entry.value is not None else 1
