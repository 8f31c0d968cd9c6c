"""``MemoryAdmin``: the part of confluent-kafka's ``AdminClient`` the runtime uses, in memory.

The runtime creates and checks topics before it runs (retry tiers, DLQs, changelogs);
with this admin the ``TestDriver`` runs that same setup against a ``MemoryCluster``:
``list_topics`` (metadata), ``create_topics`` and ``describe_configs`` (a topic's configs as
created, ``cleanup.policy`` defaulting to ``delete``; the broker's replication default),
``incremental_alter_configs`` (a share group's start), each answering at once through
resolved futures, as the real client's do once the broker replies.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin._config import ConfigEntry, ConfigResource
from confluent_kafka.admin._metadata import ClusterMetadata
from confluent_kafka.cimpl import NewTopic

from streams.testing.memory.cluster import MemoryCluster

_DEFAULTS = {"cleanup.policy": "delete"}
_BROKER = {"default.replication.factor": "1"}  # one broker: one replica


class MemoryAdmin:
    """An admin client of ``cluster`` (see the module docstring)."""

    def __init__(self, cluster: MemoryCluster) -> None:
        self._cluster = cluster
        self._configs: dict[str, dict[str, str]] = {}

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        return self._cluster._metadata(topic)

    def create_topics(
        self, new_topics: Iterable[NewTopic], **_timeouts: Any
    ) -> dict[str, Future[None]]:
        out: dict[str, Future[None]] = {}
        for new in new_topics:
            future: Future[None] = Future()
            if new.topic in self._cluster.topics():
                error = KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, f"{new.topic} exists")
                future.set_exception(KafkaException(error))
            else:
                self._cluster.create_topic(new.topic, new.num_partitions)
                self._configs[new.topic] = dict(new.config or {})
                future.set_result(None)
            out[new.topic] = future
        return out

    def describe_configs(
        self, resources: Iterable[ConfigResource], **_timeouts: Any
    ) -> dict[ConfigResource, Future[dict[str, ConfigEntry]]]:
        out: dict[ConfigResource, Future[dict[str, ConfigEntry]]] = {}
        for resource in resources:
            future: Future[dict[str, ConfigEntry]] = Future()
            if resource.restype == ConfigResource.Type.BROKER:
                future.set_result({k: ConfigEntry(k, v) for k, v in _BROKER.items()})
            elif resource.name not in self._cluster.topics():
                error = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, f"{resource.name} unknown")
                future.set_exception(KafkaException(error))
            else:
                configs = {**_DEFAULTS, **self._configs.get(resource.name, {})}
                future.set_result({k: ConfigEntry(k, v) for k, v in configs.items()})
            out[resource] = future
        return out

    def incremental_alter_configs(
        self, resources: Iterable[ConfigResource], **_timeouts: Any
    ) -> dict[ConfigResource, Future[None]]:
        """Taken and done: a share group's start (the only config the runtime sets) is
        the memory share consumer's anyway, the earliest offset."""
        out: dict[ConfigResource, Future[None]] = {}
        for resource in resources:
            future: Future[None] = Future()
            future.set_result(None)
            out[resource] = future
        return out


class MemoryClients:
    """The runtime's client factory (``streams.runtime.Clients``) on a ``MemoryCluster``."""

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self._admin = MemoryAdmin(cluster)

    def consumer(self, config: dict[str, Any]) -> Any:
        return self.cluster.consumer(config)

    def producer(self, config: dict[str, Any]) -> Any:
        return self.cluster.producer(config)

    def share_consumer(self, config: dict[str, Any]) -> Any:
        return self.cluster.share_consumer(config)

    def admin(self) -> MemoryAdmin:
        return self._admin
