"""Before the first poll: the topics read must exist (a join's co-partitioned); the topics owned
are created."""

from __future__ import annotations

from streams.cluster import TopicNotFoundError, Topics
from streams.runtime.errors import CoPartitionError, MissingTopicError
from streams.topology import Topology
from streams.topology.tables import copartition_problems


def prepare_topics(topics: Topics, topology: Topology) -> int:
    """Check the source topics exist and create missing owned topics with as many
    partitions as the widest source (so keys keep their partition count). Returns that
    partition count. Raises MissingTopicError naming a source topic that does not exist
    (an owned topic the topology reads, such as a repartition topic, is created). Owned
    topics get ``topics``' replication factor; one that exists is kept (with a WARNING when
    it has fewer replicas)."""
    widest = 1
    ours = {o.name for o in topology.owned_topics}
    internal: set[str] = set()  # read, but owned and not there yet: created below
    counts: dict[str, int] = {}
    for topic in topology.topics_read:
        try:
            counts[topic] = topics.partition_count(topic)
        except TopicNotFoundError:
            if topic in ours:
                internal.add(topic)
                continue
            raise MissingTopicError(
                f"topology {topology.app_id!r} reads topic {topic!r}, which does not exist"
            ) from None
        widest = max(widest, counts[topic])
    problems = copartition_problems(topology, {**dict.fromkeys(internal, widest), **counts})
    if problems:
        raise CoPartitionError("; ".join(problems))
    for owned in topology.owned_topics:
        topics.ensure(owned.name, widest, owned.config)
    return widest
