"""The broker lookups replay, resets and lag need, behind one AdminClient with short timeouts.

Every method blocks for at most about ``timeout`` seconds (retrying the broker's
retriable errors, such as a coordinator still loading, within that time) and raises a
``ReplayError`` subclass with a one-line message: ``ClusterError`` when the cluster cannot
be reached or refuses, ``UnknownTopicError`` for a topic or partition it does not have.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ConfigResource,
    OffsetSpec,
    ResourceType,
)

from streams.config import client_config, external_bootstrap
from streams.coordinates import TP
from streams.replay.errors import ClusterError, ClusterRefusedError, UnknownTopicError
from streams.replay.positions import TopicSelection

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
DEFAULT_TIMEOUT = 10.0
# Errors of a cluster still settling (a new topic's leader, the group coordinator of a
# fresh cluster while __consumer_offsets is made) that librdkafka does not flag retriable.
_MOVING = frozenset(
    (
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
    )
)
NO_COMMIT = -1001  # librdkafka's OFFSET_INVALID: the group has no offset for the partition

OffsetKind = Literal["earliest", "latest"] | int
T = TypeVar("T")


def default_bootstrap() -> str:
    """``KAFKA_BOOTSTRAP_SERVERS`` when set, else the local broker's default address."""
    return external_bootstrap() or DEFAULT_BOOTSTRAP


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


def _offset_spec(at: OffsetKind) -> Any:
    if at == "earliest":
        return OffsetSpec.earliest()  # type: ignore[no-untyped-call]
    if at == "latest":
        return OffsetSpec.latest()  # type: ignore[no-untyped-call]
    return OffsetSpec.for_timestamp(at)


_CHECK_SLICE_S = 0.5  # how long one metadata request of ``Cluster.check`` may wait


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
        self.admin = AdminClient(self.client_config(error_cb=self._refused))
        self._checked = False

    def client_config(self, **defaults: Any) -> dict[str, Any]:
        """The config of a client of this cluster: short timeouts, ``defaults``, then the
        user's settings."""
        ms = max(int(self.timeout * 1000), 1000)
        timeouts = {"socket.timeout.ms": ms, "socket.connection.setup.timeout.ms": ms}
        return client_config(self.bootstrap, self.settings, **timeouts, **defaults)

    # -- plumbing ---------------------------------------------------------------------

    def _wait(self, what: str, call: Callable[[], T]) -> T:
        """Run ``call`` until it succeeds, retrying retriable Kafka errors until the deadline."""
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
                if (err.retriable() or err.code() in _MOVING) and time.monotonic() < deadline:
                    time.sleep(0.1)  # a coordinator still loading: the broker asks us to retry
                    continue
                if err.code() in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT):
                    raise self._unreachable(what) from exc
                if err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    raise UnknownTopicError(f"{what}: unknown topic or partition") from exc
                raise ClusterError(f"{what} failed: {err.str() or err.name()}") from exc

    def _request(
        self, what: str, submit: Callable[[], Mapping[Any, Future[Any]]]
    ) -> dict[Any, Any]:
        """Submit an admin request and wait for all its futures; a retriable error
        resubmits it (a failed future stays failed), until the deadline."""

        def attempt() -> dict[Any, Any]:
            # librdkafka fails the future itself at request_timeout; the margin lets it
            return {key: f.result(self.timeout + 5) for key, f in submit().items()}

        return self._wait(what, attempt)

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

    # -- topics -----------------------------------------------------------------------

    def partitions(self, topic: str) -> list[int]:
        """The partition numbers of ``topic``. Raises ``UnknownTopicError``."""
        self.check()
        md = self._wait(
            f"describe topic {topic!r}", lambda: self.admin.list_topics(topic, timeout=self.timeout)
        )
        info = md.topics.get(topic)
        if info is None or (
            info.error is not None
            and info.error.code()
            in (
                KafkaError.UNKNOWN_TOPIC_OR_PART,
                KafkaError._UNKNOWN_TOPIC,
            )
        ):
            raise UnknownTopicError(f"topic {topic!r} does not exist")
        if info.error is not None:
            raise ClusterError(f"cannot describe topic {topic!r}: {info.error.str()}")
        return sorted(info.partitions)

    def topics(self) -> set[str]:
        """The names of every topic in the cluster."""
        return set(self.topic_metadata())

    def topic_metadata(self, topic: str | None = None) -> dict[str, Any]:
        """confluent-kafka's ``TopicMetadata`` (partitions with leader, replicas, ISR) of
        every topic, or of ``topic`` alone (check it exists with ``partitions`` first)."""
        self.check()
        md = self._wait(
            f"describe topic {topic!r}" if topic else "list topics",
            lambda: self.admin.list_topics(topic, timeout=self.timeout),
        )
        return dict(md.topics)

    def topic_configs(self, topic: str) -> list[Any]:
        """confluent-kafka's ``ConfigEntry`` of every config of ``topic`` (name, value,
        source, is_default, is_sensitive)."""
        self.check()
        resource = ConfigResource(ResourceType.TOPIC, topic)
        result = self._request(
            f"describe configs of topic {topic!r}",
            lambda: self.admin.describe_configs([resource], request_timeout=self.timeout),
        )
        return list(result[resource].values())

    def select(self, selection: TopicSelection) -> list[int]:
        """The partitions a selection names, checked to exist. Raises ``UnknownTopicError``."""
        existing = self.partitions(selection.topic)
        if selection.partitions is None:
            return existing
        missing = sorted(set(selection.partitions) - set(existing))
        if missing:
            raise UnknownTopicError(
                f"topic {selection.topic!r} has no partition {', '.join(map(str, missing))} "
                f"(it has {len(existing)}: 0..{len(existing) - 1})"
            )
        return list(selection.partitions)

    # -- offsets ----------------------------------------------------------------------

    def list_offsets(
        self,
        partitions: Iterable[TP],
        at: OffsetKind,
        *,
        read_committed: bool = False,
    ) -> dict[TP, int]:
        """The broker's ListOffsets answer per partition: the log start (``"earliest"``),
        the log end (``"latest"``), or for a time in epoch ms (offsets-for-times: -1 when
        no record is that recent)."""
        spec = _offset_spec(at)
        request = {TopicPartition(t, p): spec for t, p in partitions}
        if not request:
            return {}
        isolation = (
            IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
        )
        results = self._request(
            "list offsets",
            lambda: self.admin.list_offsets(
                request, isolation_level=isolation, request_timeout=self.timeout
            ),
        )
        return {(tp.topic, tp.partition): info.offset for tp, info in results.items()}

    def record_times(self, offsets: Mapping[TP, int]) -> dict[TP, int]:
        """The timestamp (epoch ms) of the record at each offset (the first one after it,
        where it is gone), read with one consumer assigned there: one fetch per partition,
        every partition within ``timeout`` together. A partition with no record there in
        time (or one without timestamps) is left out."""
        if not offsets:
            return {}
        self.check()
        consumer = Consumer(
            self.client_config(
                **{
                    "group.id": "streams-record-times",  # never joined, never committed
                    "enable.auto.commit": False,
                    "enable.partition.eof": True,
                    "fetch.max.bytes": 1024 * 1024,
                }
            )
        )
        found: dict[TP, int] = {}
        waiting = set(offsets)
        try:
            consumer.assign([TopicPartition(t, p, o) for (t, p), o in offsets.items()])
            deadline = time.monotonic() + self.timeout
            while waiting and (left := deadline - time.monotonic()) > 0:
                for msg in consumer.consume(500, timeout=min(left, 0.5)):
                    key = (msg.topic(), msg.partition())
                    if key not in waiting:
                        continue
                    waiting.discard(key)  # its first record, or its end
                    consumer.pause([TopicPartition(*key)])  # nothing more from it
                    kind, ms = msg.timestamp()
                    if msg.error() is None and kind and ms >= 0:
                        found[key] = ms
        finally:
            consumer.close()
        return found

    def committed(self, group: str, partitions: Sequence[TP] | None = None) -> dict[TP, int]:
        """The group's committed offsets (all of them, or for ``partitions``); partitions
        without a commit are left out."""
        self.check()
        if partitions is not None:
            return self._fetch_committed(group, partitions)
        # librdkafka 2.16's ListConsumerGroupOffsets crashes the process (a segfault in
        # its response handler) for a group the cluster has no offsets of on a cluster
        # without __consumer_offsets yet: asked of groups that exist only.
        if not self.describe_group(group).exists:
            return {}
        request = [ConsumerGroupTopicPartitions(group, None)]
        result = self._request(
            f"list offsets of group {group!r}",
            lambda: self.admin.list_consumer_group_offsets(request, request_timeout=self.timeout),
        )[group]
        return {
            (tp.topic, tp.partition): tp.offset
            for tp in result.topic_partitions
            if tp.offset >= 0 and tp.error is None
        }

    def _fetch_committed(self, group: str, partitions: Sequence[TP]) -> dict[TP, int]:
        """``committed`` for known partitions: an OffsetFetch by a consumer of the group
        that never joins it (no admin request, see ``committed``)."""
        consumer = Consumer(self.client_config(**{"group.id": group, "enable.auto.commit": False}))
        try:
            tps = [TopicPartition(t, p) for t, p in partitions]
            found = self._wait(
                f"list offsets of group {group!r}",
                lambda: consumer.committed(tps, timeout=self.timeout),
            )
        finally:
            consumer.close()
        return {
            (tp.topic, tp.partition): tp.offset
            for tp in found
            if tp.offset >= 0 and tp.error is None
        }

    def alter_committed(self, group: str, offsets: Mapping[TP, int]) -> None:
        """Commit ``offsets`` for ``group`` (the group must have no active members)."""
        request = [
            ConsumerGroupTopicPartitions(
                group, [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
            )
        ]
        what = f"commit offsets of group {group!r}"

        def commit() -> list[Any]:  # TopicPartitions with an error
            result = self._request(
                what,
                lambda: self.admin.alter_consumer_group_offsets(
                    request, request_timeout=self.timeout
                ),
            )[group]
            failed = [tp for tp in result.topic_partitions if tp.error is not None]
            if failed and failed[0].error.code() in _MOVING:
                # A fresh cluster's coordinator answers per partition: asked again.
                raise KafkaException(failed[0].error)
            return failed

        failed = self._wait(what, commit)
        if failed:
            tp = failed[0]
            raise ClusterError(
                f"commit offsets of group {group!r} failed on {tp.topic}:{tp.partition}: "
                f"{tp.error.str()}"
            )

    # -- groups -----------------------------------------------------------------------

    def groups(self) -> list[str]:
        """Every consumer group the cluster knows, sorted."""
        self.check()
        result = self._request(
            "list groups",
            lambda: {"all": self.admin.list_consumer_groups(request_timeout=self.timeout)},
        )["all"]
        return sorted(g.group_id for g in result.valid)

    def describe_group(self, group: str) -> GroupInfo:
        """State and members of ``group`` (state ``Dead`` when the cluster does not know it)."""
        self.check()
        desc = self._request(
            f"describe group {group!r}",
            lambda: self.admin.describe_consumer_groups([group], request_timeout=self.timeout),
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
