"""``Cluster``: what a command or tool holds to ask a cluster, with a deadline.

Every method blocks for at most about ``timeout`` seconds (retrying the broker's
retriable errors, such as a coordinator still loading, within that time) and raises a
``ClusterError`` with a one-line message: ``ClusterRefusedError`` when a broker refused us,
``TopicNotFoundError`` for a topic or partition the cluster does not have. The lookups
themselves live beside it (``topics``, ``offsets``, ``groups``); ``Cluster`` names them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from streams.cluster.errors import MOVING, ClusterError, ClusterRefusedError, TopicNotFoundError
from streams.cluster.groups import GroupInfo, delete_groups, describe_group, list_groups
from streams.cluster.offsets import (
    OffsetKind,
    alter_committed,
    committed,
    list_offsets,
    record_times,
    records_before,
)
from streams.cluster.topics import (
    DEFAULT_REPLICATION,
    create_topic,
    delete_topics,
    partition_count,
    topic_configs,
    topic_metadata,
)
from streams.config import DEFAULT_BOOTSTRAP, DEFAULT_TIMEOUT, client_config, external_bootstrap
from streams.coordinates import TP

_CHECK_SLICE_S = 0.5  # how long one metadata request of ``Cluster.check`` may wait

T = TypeVar("T")


def default_bootstrap() -> str:
    """``KAFKA_BOOTSTRAP_SERVERS`` when set, else the local broker's default address."""
    return external_bootstrap() or DEFAULT_BOOTSTRAP


class _Refusals:
    """The admin client's ``error_cb``: keeps why a broker refused us. librdkafka only
    says "transport failure" to the request itself."""

    CODES = frozenset(
        {
            KafkaError._AUTHENTICATION,
            KafkaError._SSL,
            KafkaError.SASL_AUTHENTICATION_FAILED,
            KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        }
    )

    def __init__(self) -> None:
        self.reason: str | None = None

    def __call__(self, err: KafkaError) -> None:
        if err.code() in self.CODES:
            self.reason = err.str()


class Cluster:
    """Typed, blocking broker lookups with a deadline. Not thread-safe; cheap to create."""

    def __init__(
        self,
        bootstrap: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        self.bootstrap = bootstrap or default_bootstrap()
        self.timeout = timeout
        self.settings = dict(settings or {})
        """The user's client settings (``--config``, ``-X``): every client made here has them."""
        self._refused = _Refusals()
        # Its own client, not the process's shared one: the error callback is this
        # Cluster's, and the short timeouts are its own.
        self.admin = AdminClient(self.client_config(error_cb=self._refused))
        self._checked = False

    def client_config(self, **defaults: Any) -> dict[str, Any]:
        """The config of a client of this cluster: short timeouts, ``defaults``, then the
        user's settings."""
        ms = max(int(self.timeout * 1000), 1000)
        timeouts = {"socket.timeout.ms": ms, "socket.connection.setup.timeout.ms": ms}
        return client_config(self.bootstrap, self.settings, **timeouts, **defaults)

    # -- asking, with a deadline -------------------------------------------------------

    def ask(self, what: str, call: Callable[[], T]) -> T:
        """Run ``call`` until it succeeds, retrying retriable Kafka errors until the deadline
        (``what`` names it in the error)."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return call()
            except FutureTimeout as exc:
                raise self._unreachable(what) from exc
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                if not isinstance(err, KafkaError):
                    raise ClusterError(f"{what} failed: {exc}") from exc
                if (err.retriable() or err.code() in MOVING) and time.monotonic() < deadline:
                    time.sleep(0.1)  # a coordinator still loading: the broker asks us to retry
                    continue
                if err.code() in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT):
                    raise self._unreachable(what) from exc
                if err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    raise TopicNotFoundError(f"{what}: unknown topic or partition") from exc
                raise ClusterError(f"{what} failed: {err.str() or err.name()}") from exc

    def request(self, what: str, submit: Callable[[], Mapping[Any, Future[Any]]]) -> dict[Any, Any]:
        """Submit an admin request and wait for all its futures; a retriable error
        resubmits it (a failed future stays failed), until the deadline."""

        def attempt() -> dict[Any, Any]:
            # librdkafka fails the future itself at request_timeout; the margin lets it
            return {key: f.result(self.timeout + 5) for key, f in submit().items()}

        return self.ask(what, attempt)

    def check(self) -> None:
        """Raise ``ClusterError`` unless the cluster answers a metadata request in time;
        ``ClusterRefusedError`` as soon as a broker refused us (asked in slices of
        ``_CHECK_SLICE_S``: a wrong password fails in a second, not at the deadline)."""
        if self._checked:
            return
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            try:
                self.admin.list_topics(timeout=max(min(_CHECK_SLICE_S, left), 0.05))
                break
            except KafkaException as exc:
                self.admin.poll(0)  # serves the error callbacks: the refusal, if there was one
                if self._refused.reason is not None or time.monotonic() >= deadline:
                    raise self._unreachable(None) from exc
        self._checked = True

    def _unreachable(self, what: str | None) -> ClusterError:
        """The error for a cluster that did not answer: the reason a broker gave when it
        refused us (a wrong password, a failed TLS handshake), else the time waited."""
        doing = f" ({what})" if what else ""
        self.admin.poll(0)  # serves the error callbacks: the refusal, if there was one
        if self._refused.reason is not None:
            return ClusterRefusedError(
                f"Kafka at {self.bootstrap} refused us: {self._refused.reason}"
            )
        return ClusterError(
            f"cannot reach Kafka at {self.bootstrap} within {self.timeout:g} s{doing}"
        )

    # -- topics (``streams.cluster.topics``) -------------------------------------------

    def partition_count(self, topic: str) -> int:
        """The partition count of ``topic`` (its partitions are 0 to count - 1). Raises
        ``TopicNotFoundError``."""
        self.check()
        return partition_count(self.admin, topic, self.timeout)

    def topics(self) -> set[str]:
        """The names of every topic in the cluster."""
        return set(self.topic_metadata())

    def topic_metadata(self, topic: str | None = None) -> dict[str, Any]:
        """confluent-kafka's ``TopicMetadata`` (partitions with leader, replicas, ISR) of
        every topic, or of ``topic`` alone (raises ``TopicNotFoundError``)."""
        self.check()
        if topic is not None:
            return {topic: topic_metadata(self.admin, topic, self.timeout)}
        return dict(
            self.ask("list topics", lambda: self.admin.list_topics(timeout=self.timeout)).topics
        )

    def topic_configs(self, topic: str) -> list[Any]:
        """confluent-kafka's ``ConfigEntry`` of every config of ``topic`` (name, value,
        source, is_default, is_sensitive). Raises ``TopicNotFoundError``."""
        self.check()
        return list(topic_configs(self.admin, topic, self.timeout).values())

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        config: Mapping[str, str] | None = None,
        *,
        exist_ok: bool = False,
        replication_factor: int = DEFAULT_REPLICATION,
    ) -> bool:
        """See ``streams.cluster.create_topic``."""
        self.check()
        return create_topic(
            self.admin,
            name,
            partitions,
            config,
            exist_ok=exist_ok,
            timeout=self.timeout,
            replication_factor=replication_factor,
        )

    def delete_topics(self, names: Iterable[str]) -> None:
        """See ``streams.cluster.delete_topics``."""
        self.check()
        delete_topics(self.admin, names, self.timeout)

    # -- offsets (``streams.cluster.offsets``) -----------------------------------------

    def list_offsets(
        self, partitions: Iterable[TP], at: OffsetKind, *, read_committed: bool = False
    ) -> dict[TP, int]:
        """See ``streams.cluster.offsets.list_offsets``."""
        return list_offsets(self, partitions, at, read_committed=read_committed)

    def record_times(self, offsets: Mapping[TP, int]) -> dict[TP, int | None]:
        """See ``streams.cluster.offsets.record_times``."""
        return record_times(self, offsets)

    def records_before(self, spans: Mapping[TP, tuple[int, int]]) -> set[TP]:
        """See ``streams.cluster.offsets.records_before``."""
        return records_before(self, spans)

    def committed(self, group: str, partitions: Sequence[TP] | None = None) -> dict[TP, int]:
        """See ``streams.cluster.offsets.committed``."""
        return committed(self, group, partitions)

    def alter_committed(self, group: str, offsets: Mapping[TP, int]) -> None:
        """See ``streams.cluster.offsets.alter_committed``."""
        alter_committed(self, group, offsets)

    # -- groups (``streams.cluster.groups``) -------------------------------------------

    def groups(self) -> list[str]:
        """See ``streams.cluster.groups.list_groups``."""
        return list_groups(self)

    def describe_group(self, group: str) -> GroupInfo:
        """See ``streams.cluster.groups.describe_group``."""
        return describe_group(self, group)

    def delete_groups(self, groups: Sequence[str]) -> None:
        """See ``streams.cluster.groups.delete_groups``."""
        delete_groups(self, groups)
