"""State declared by a topology: named stores, each partitioned like its source topic.

A store is partitioned like the one source topic it is fed by: partition ``p`` of the
store holds what the records of input partition ``p`` wrote, and is backed by partition
``p`` of the compacted changelog ``<app>-<store>-changelog``. ``builder.store(name)``
declares a store processors reach with ``ctx.store(name)``; ``stream.dedup(...)`` declares
its own store (named after the step). Nothing here touches Kafka: the executors open the
stores (``streams.runtime.state``, the ``TestDriver``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from streams.state.changelog import changelog_topic
from streams.state.errors import StateError
from streams.topology.names import TopicRef, check_topic, resolve_topic
from streams.topology.nodes import SourceNode

if TYPE_CHECKING:
    from streams.topology.topology import Topology

BACKENDS = ("rocksdb", "memory")
"""``rocksdb``: on disk, not bounded by memory (production). ``memory``: a dict (tests,
small state); both restore from the changelog."""

GUARANTEES = ("at_least_once", "exactly_once")


@dataclass(frozen=True, slots=True)
class StoreSpec:
    """A declared store. ``source``: the topic it is partitioned like (None: the
    topology's only source, or for a dedup store the source upstream of its step);
    ``owner``: the step that declared it (dedup), None for a user store."""

    name: str
    backend: str = "rocksdb"
    source: TopicRef | None = None
    owner: str | None = None


def store_source(topology: Topology, spec: StoreSpec) -> str | None:
    """The concrete source topic feeding ``spec``, or None when it cannot be told."""
    if spec.source is not None:
        return resolve_topic(spec.source, topology.app_id)
    topics = upstream_sources(topology, spec.owner) if spec.owner else topology.topics_read
    return topics[0] if len(topics) == 1 else None


def upstream_sources(topology: Topology, node: str) -> list[str]:
    """Every source topic whose records can reach ``node``."""
    found: list[str] = []
    seen: set[str] = set()
    stack = [node]
    while stack:
        name = stack.pop()
        if name in seen or name not in topology.nodes:
            continue
        seen.add(name)
        current = topology.nodes[name]
        if isinstance(current, SourceNode):
            topic = topology.topic(current.topic)
            if topic not in found:
                found.append(topic)
        stack.extend(edge.node for edge in current.parents)
    return sorted(found)


def store_problems(topology: Topology) -> list[str]:
    """Build-time checks of the declared stores and the processing guarantee."""
    problems: list[str] = []
    if topology.processing_guarantee not in GUARANTEES:
        problems.append(
            f"processing_guarantee {topology.processing_guarantee!r} is not one of {GUARANTEES}"
        )
    read = set(topology.topics_read)
    for spec in topology.stores.values():
        what = f"store {spec.name!r}" + (f" (of step {spec.owner!r})" if spec.owner else "")
        try:
            bad = check_topic(changelog_topic(topology.app_id, spec.name))
        except StateError as exc:
            bad = str(exc)
        if bad:
            problems.append(f"{what}: {bad}")
        if spec.backend not in BACKENDS:
            problems.append(f"{what}: unknown backend {spec.backend!r} (use one of {BACKENDS})")
        topic = store_source(topology, spec)
        if topic is None:
            problems.append(
                f"{what}: cannot tell which source topic it is partitioned like: "
                "name it with source=..."
            )
        elif topic not in read:
            problems.append(f"{what}: source {topic!r} is not a topic the topology reads")
    return problems
