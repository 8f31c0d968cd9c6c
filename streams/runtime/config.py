"""How one runtime instance connects and batches: options, env, and librdkafka configs.

How the instance's consumer joins its group is decided here, once (``group_membership``),
for the protocol the user's settings choose (``group.protocol``: ``classic``, the
default, or ``consumer``, KIP-848).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from streams.cluster import Topics
from streams.config import CONSUMER_PROTOCOL, bounded_prefetch, client_config, group_protocol
from streams.http_access import LOCAL, HttpAccess

PREFETCH_KBYTES = 2_048
"""What an instance's consumer keeps fetched ahead, at most (see ``consumer_config``)."""


@dataclass(frozen=True)
class RuntimeConfig:
    """Settings of one instance. ``client``: librdkafka settings of every client it makes
    (consumers, producers, admin, restores: security, timeouts); ``consumer``/``producer``
    those of one kind (``-X consumer.key=value``), applied after ``client``."""

    bootstrap: str
    batch_size: int = 1_000  # records per consume() call
    poll_timeout_s: float = 0.5
    commit_interval_s: float = 1.0
    status_interval_s: float = 1.0
    shutdown_timeout_s: float = 30.0  # flush budget on revoke and shutdown
    auto_offset_reset: str = "earliest"  # where a new group starts
    consumer: Mapping[str, Any] = field(default_factory=dict)
    producer: Mapping[str, Any] = field(default_factory=dict)
    client: Mapping[str, Any] = field(default_factory=dict)
    # None: the topology's; "at_least_once" or "exactly_once" (transactions) override it.
    processing_guarantee: str | None = None
    # Local state of stores (None: $STREAMS_STATE_DIR/apps, else ~/.local/state/streams/apps).
    state_dir: str | None = None
    # This instance's stable name (state dir, transactional.id); None: a free local slot.
    instance_id: str | None = None
    # A record in hand at this many process deaths in a row goes to the DLQ at the next
    # start (``streams.pipeline.crash_guard``); 0 turns the guard off.
    crash_limit: int = 3
    # A record in hand this long is reported (one WARNING with its coordinates); 0: never.
    stall_warning_s: float = 30.0
    # A partition with lag whose position has not moved this long is stalled (one WARNING,
    # a metric, /readyz not ready until it moves: ``streams.runtime.stall``); 0: never.
    stall_after_s: float = 60.0
    # Serve Prometheus metrics, /healthz and /readyz on this port (0: a free one); None:
    # no metrics, and nothing of them on the record path (``streams.observability``).
    metrics_port: int | None = None
    # Answer /stores/<table>/<key> (and /healthz, /readyz) on this port (0: a free one),
    # advertised to the group as ``advertise`` (host:port; default 127.0.0.1 and the port)
    # for ``streams query``; None: no query port (``streams.runtime.query``).
    query_port: int | None = None
    advertise: str | None = None
    # The host both ports bind (127.0.0.1 unless told) and the token their requests must
    # carry: another host without a token is refused before anything is bound
    # (``streams.http_access``).
    http: HttpAccess = LOCAL
    # With concurrency (async steps): records of one partition held in flight or waiting
    # for their key before the partition is paused (``streams.pipeline.concurrency``).
    buffered_per_partition: int = 1_000
    # Exactly-once: how long an open transaction of a dead instance blocks readers at most.
    transaction_timeout_ms: int = 10_000
    # Exactly-once: once the instance has caught up (nothing at hand, every partition read
    # to its end), commit if this long has passed since the last commit rather than at the
    # interval (outputs are readable only when their transaction commits;
    # ``streams.pipeline.commit``). None: only at the interval.
    commit_idle_s: float | None = 0.1
    # Replicas of every topic the instance creates (outputs, retry tiers, DLQs, changelogs,
    # repartition topics); -1: the cluster's default.replication.factor (Kafka Streams'
    # replication.factor since 3.0), so a three-node cluster's topics outlive a node.
    replication_factor: int = -1
    # Join the group as a static member named like the instance (``group.instance.id``,
    # classic protocol only: ``group_membership``): a restart takes its partitions back at
    # once, but a stopped instance's partitions wait for the session timeout. Off by
    # default: librdkafka (2.16) fences a static member itself, fatally, when its session
    # times out while the group's coordinator node is lost (librdkafka issue 3437).
    static_membership: bool = False

    def topics(self, admin: Any) -> Topics:
        """The door through which the instance creates and sizes its topics."""
        return Topics(admin, self.replication_factor, self.shutdown_timeout_s)

    def consumer_config(
        self, group_id: str, *, range_assignor: bool = False, group_instance_id: str | None = None
    ) -> dict[str, Any]:
        """The instance's consumer of group ``group_id``: ``range_assignor`` when partition
        *n* of every input must land on one instance; ``group_instance_id``: its static
        member name (see ``group_membership``)."""
        settings = {**self.client, **self.consumer}
        member = self.static_membership and group_instance_id is not None
        defaults = {
            "group.id": group_id,
            **group_membership(
                settings,
                range_assignor=range_assignor,
                group_instance_id=group_instance_id if member else None,
            ),
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": self.auto_offset_reset,
            # Prefetch: 2 MB for the whole consumer, not librdkafka's 64 MB (seconds of
            # work at our rates; 16 MB cost 80 MB of peak RSS in the throughput bench for no
            # speed), refilled 5 ms after there is room (``bounded_prefetch``). Measured on
            # the mirror: 110k-134k records/s, where 4 MB with librdkafka's 1 s refill
            # backoff capped it at 48k.
            **bounded_prefetch(PREFETCH_KBYTES),
            # Never process records of aborted or open transactions (librdkafka's default,
            # stated: exactly-once outputs upstream stay exactly-once through us).
            "isolation.level": "read_committed",
        }
        return client_config(self.bootstrap, settings, **defaults)

    def share_consumer_config(self, group_id: str) -> dict[str, Any]:
        """A share group's consumer: records acknowledged one by one, by the chain."""
        defaults = {"group.id": group_id, "share.acknowledgement.mode": "explicit"}
        return client_config(self.bootstrap, {**self.client, **self.consumer}, **defaults)

    def producer_config(self, transactional_id: str | None = None) -> dict[str, Any]:
        """The output producer; with ``transactional_id`` a transactional one."""
        eos: dict[str, Any] = {}
        if transactional_id is not None:
            eos = {
                "transactional.id": transactional_id,
                "transaction.timeout.ms": self.transaction_timeout_ms,
            }
        defaults = {
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "compression.type": "lz4",
            # Java's default partitioner for keyed records: same partition from any client.
            "partitioner": "murmur2_random",
            # No Python per acknowledged record: commits flush and check for failures.
            "delivery.report.only.error": True,
            **eos,
        }
        return client_config(self.bootstrap, {**self.client, **self.producer}, **defaults)


def group_membership(
    settings: Mapping[str, Any], *, range_assignor: bool, group_instance_id: str | None
) -> dict[str, Any]:
    """How a consumer that subscribes joins its group, under the protocol the user's
    ``settings`` choose (the caller puts ``settings`` after these, so they win).

    Classic: the cooperative-sticky assignor (``range`` when asked), a 10 s session and,
    with ``group_instance_id``, static membership (KIP-345). Consumer (KIP-848): the broker
    times sessions and librdkafka refuses the classic settings; the broker's ``range``
    assignor when asked (else its default, ``uniform``). Never static there: with
    librdkafka 2.16 on Kafka 4.4 a static member restarted after a crash gets a fatal
    UNRELEASED_INSTANCE_ID until the broker expires its predecessor (45 s by default).
    Rebalances are incremental on the consumer protocol and with cooperative-sticky; the
    classic ``range`` assignor is eager (``streams.config.incremental_rebalances``)."""
    if group_protocol(settings) == CONSUMER_PROTOCOL:
        return {"group.remote.assignor": "range"} if range_assignor else {}
    static = {"group.instance.id": group_instance_id} if group_instance_id is not None else {}
    return {
        "partition.assignment.strategy": "range" if range_assignor else "cooperative-sticky",
        # A crashed instance's partitions move after this long; 10 s is Kafka Streams'
        # order of magnitude without making every restart wait 45 s.
        "session.timeout.ms": 10_000,
        "heartbeat.interval.ms": 2_000,
        **static,
    }


def split_client_overrides(
    items: Mapping[str, str],
) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Route client settings: ``consumer.x`` / ``producer.x`` to one kind of client,
    anything else to every client. Returns ``(client, consumer, producer)``."""
    client: dict[str, str] = {}
    consumer: dict[str, str] = {}
    producer: dict[str, str] = {}
    for key, value in items.items():
        if key.startswith("consumer."):
            consumer[key.removeprefix("consumer.")] = value
        elif key.startswith("producer."):
            producer[key.removeprefix("producer.")] = value
        else:
            client[key] = value
    return client, consumer, producer
