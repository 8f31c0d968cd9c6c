"""Event-sourced projections: which app serves one now, and building it anew beside it.

A projection is a topology whose tables are read from outside (``streams query``): the
fold of an event log. Its name (``accounts``) stands for the app that serves it now: the
compacted topic ``<name>-projection`` holds that app id (none: the name is the app id).
``streams query NAME ...`` asks that app.

A rebuild changes nothing of what runs: the new fold runs under a new app id
(``<name>-g<N>``, N one more than the current generation's), as a new consumer group
reading its inputs from the earliest offset, into tables and changelogs of its own, while
the current app goes on answering queries. Once the new group has caught up (its
committed offsets at the end of every input partition), ``switch`` points the name at it;
queries go there from then on. Stop the old app's instances after that (nothing stops
them for you: a rebuild stops nothing).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from confluent_kafka import Consumer, Producer, TopicPartition

from streams.cluster import Cluster
from streams.errors import StreamsError
from streams.replay import lag
from streams.topology import Topology
from streams.topology.nodes import StepKind

POINTER_SUFFIX = "-projection"
_GENERATION = re.compile(r"^(?P<base>.+)-g(?P<n>\d+)$")


class ProjectionError(StreamsError):
    """A projection's pointer cannot be read or moved."""


def pointer_topic(name: str) -> str:
    """The compacted topic that names the app serving projection ``name``."""
    return f"{name}{POINTER_SUFFIX}"


def current_app(cluster: Cluster, name: str) -> str:
    """The app id serving projection ``name`` now; ``name`` itself when it has no pointer
    (an app id is its own projection)."""
    topic = pointer_topic(name)
    if topic not in cluster.topics():
        return name
    ends = cluster.list_offsets([(topic, 0)], "latest")
    last = ends.get((topic, 0), 0) - 1
    if last < 0:
        return name
    consumer = Consumer(cluster.client_config(**{"group.id": "streams-projections"}))
    try:
        consumer.assign([TopicPartition(topic, 0, last)])
        msg = consumer.poll(cluster.timeout)
    finally:
        consumer.close()
    value = msg.value() if msg is not None and msg.error() is None else None
    if value is None:
        raise ProjectionError(f"cannot read the pointer of projection {name!r} in {topic}")
    return str(json.loads(value)["app_id"])


def next_app(name: str, current: str) -> str:
    """The app id of the next generation: ``<name>-g<N+1>`` (the first one is 1)."""
    found = _GENERATION.match(current)
    generation = int(found["n"]) if found and found["base"] == name else 1
    return f"{name}-g{generation + 1}"


def switch(cluster: Cluster, name: str, app_id: str) -> None:
    """Point projection ``name`` at ``app_id`` (the pointer topic is made on first use);
    returns once the broker has the record."""
    topic = pointer_topic(name)
    config = {"cleanup.policy": "compact", "min.compaction.lag.ms": "0"}
    cluster.create_topic(topic, config=config, exist_ok=True)
    record = {"app_id": app_id, "switched_at": datetime.now(UTC).isoformat()}
    producer = Producer(cluster.client_config(**{"enable.idempotence": True, "acks": "all"}))
    failed: list[str] = []
    producer.produce(
        topic,
        json.dumps(record).encode(),
        name.encode(),
        on_delivery=lambda err, _msg: failed.append(err.str()) if err is not None else None,
    )
    if producer.flush(cluster.timeout) or failed:
        raise ProjectionError(
            f"projection {name!r} was not switched to {app_id}: {failed or 'no answer'}"
        )


@dataclass(frozen=True, slots=True)
class RebuildPlan:
    """What ``streams projections rebuild`` is about to do (its dry run prints it)."""

    name: str
    current: str
    app_id: str
    records: dict[str, int]  # each input topic: the records it holds now (to read again)
    tables: list[str]

    def as_dict(self) -> dict[str, object]:
        return {
            "projection": self.name,
            "current_app": self.current,
            "new_app": self.app_id,
            "inputs": self.records,
            "tables": self.tables,
        }


def plan_rebuild(cluster: Cluster, name: str, topology: Topology) -> RebuildPlan:
    """The rebuild of projection ``name`` as ``topology`` (built under the new app id)."""
    current = current_app(cluster, name)
    if topology.app_id == current:
        raise ProjectionError(f"{current} serves {name!r} now: rebuild under another app id")
    owned = {o.name for o in topology.owned_topics}  # made by the new app, empty now
    inputs = [
        (t, p)
        for t in topology.topics_read
        if t not in owned
        for p in range(cluster.partition_count(t))
    ]
    ends = cluster.list_offsets(inputs, "latest")
    starts = cluster.list_offsets(inputs, "earliest")
    records: dict[str, int] = {}
    for tp in inputs:
        records[tp[0]] = records.get(tp[0], 0) + ends[tp] - starts[tp]
    kinds = (StepKind.AGGREGATE, StepKind.TABLE)
    tables = [step.name for step in topology.steps if step.kind in kinds]
    return RebuildPlan(name, current, topology.app_id, records, tables)


def caught_up(cluster: Cluster, topology: Topology) -> bool:
    """Whether the app's group has committed the end of every partition it reads (its
    repartition topics too)."""
    return lag.caught_up(cluster, topology.app_id, topology.topics_read)
