"""Build-time checks of a topology. Each problem is one sentence naming the node at fault.

Checked: app id and topic names (and inputs whose failure topics would share names);
duplicate and unknown node names; cycles (between steps, and through topics: a sink
writing a topic the topology reads); outputs that go nowhere;
sources and sinks whose ``type``@``version`` the schema catalog does not have; stores
(legal changelog name, known backend, one source topic) and the processing guarantee;
``retry=`` where it cannot apply (a step an aggregation feeds: ``Topology.never_retried``).
"""

from __future__ import annotations

from typing import Protocol

from streams.topology.failure_topics import shared_stems
from streams.topology.names import check_app_id, check_topic
from streams.topology.nodes import ANY_TYPE, SinkNode, SourceNode, StepKind, StepNode
from streams.topology.specs import LATE
from streams.topology.stores import store_problems
from streams.topology.topology import Topology


class CatalogLike(Protocol):
    """The part of ``streams.schemas.SchemaCatalog`` validation needs."""

    def has(self, type: str, version: int) -> bool: ...
    def versions(self, type: str) -> list[int]: ...


def validate(topology: Topology, catalog: CatalogLike | None) -> list[str]:
    """Every problem found, in node order (empty when the topology is sound)."""
    problems: list[str] = []
    app_problem = check_app_id(topology.app_id)
    if app_problem:
        problems.append(app_problem)
    if not topology.sources:
        problems.append("no source: add one with builder.source(topic, type=..., version=...)")
    problems += _links(topology)
    problems += _cycles(topology)
    problems += _topics(topology)
    problems += _dead_ends(topology)
    problems += store_problems(topology)
    problems += _tables(topology)
    problems += _retries(topology)
    if catalog is not None:
        problems += _schemas(topology, catalog)
    return problems


def _links(t: Topology) -> list[str]:
    out = []
    for node in t.nodes.values():
        for edge in node.parents:
            parent = t.nodes.get(edge.node)
            if parent is None:
                out.append(f"{node.name!r} reads from unknown node {edge.node!r}")
            elif edge.output not in parent.outputs:
                declared = ", ".join(parent.outputs) or "none"
                out.append(
                    f"{node.name!r} reads output {edge.output!r} of {edge.node!r}, "
                    f"which declares outputs: {declared}"
                )
    return out


def _cycles(t: Topology) -> list[str]:
    """Depth-first search for a back edge; reports each cycle once, as a path."""
    white, grey, black = 0, 1, 2
    color = dict.fromkeys(t.nodes, white)
    found: list[str] = []

    def visit(name: str, path: list[str]) -> None:
        color[name] = grey
        path.append(name)
        for kids in t.children(name).values():
            for kid in kids:
                if kid not in color:
                    continue
                if color[kid] == grey:
                    loop = [*path[path.index(kid) :], kid]
                    found.append("cycle: " + " -> ".join(repr(n) for n in loop))
                elif color[kid] == white:
                    visit(kid, path)
        path.pop()
        color[name] = black

    for name in t.nodes:
        if color[name] == white:
            visit(name, [])
    return found


def _topics(t: Topology) -> list[str]:
    out = []
    read: dict[str, str] = {}
    for src in t.sources:
        topic = t.topic(src.topic)
        bad = check_topic(topic)
        if bad:
            out.append(f"source {src.name!r}: {bad}")
        if topic in read:
            out.append(f"sources {read[topic]!r} and {src.name!r} both read topic {topic!r}")
        read.setdefault(topic, src.name)
    out += shared_stems(t.app_id, read)
    for sink in t.sinks:
        topic = t.topic(sink.topic)
        bad = check_topic(topic)
        if bad:
            out.append(f"sink {sink.name!r}: {bad}")
        # A topic written and read back is a loop when what reads it leads to what writes
        # it (a record would go round for ever); else it is a stage (orders rekeyed to a
        # topic of their own, read by a join).
        if topic in read and sink.name in t.downstream(read[topic]):
            out.append(
                f"cycle through topic {topic!r}: sink {sink.name!r} writes the topic "
                f"source {read[topic]!r} reads"
            )
    return out


def _dead_ends(t: Topology) -> list[str]:
    out = []
    for node in t.nodes.values():
        if isinstance(node, SinkNode):
            continue
        kids = t.children(node.name)
        what = "source" if isinstance(node, SourceNode) else f"step ({node.kind})"
        if isinstance(node, StepNode) and node.kind is StepKind.TABLE:
            continue  # read by joins, through its store
        spec = node.aggregate if isinstance(node, StepNode) else None
        if spec is not None and spec.windows is None and not kids.get(node.outputs[0]):
            continue  # a table read through its store: joins, queries (a projection)
        if len(node.outputs) == 1:
            if not kids.get(node.outputs[0]):
                out.append(
                    f"{what} {node.name!r} goes nowhere: nothing reads its output "
                    "(add a step or .to(...), or remove it)"
                )
            continue
        for output in node.outputs:
            if output == LATE and isinstance(node, StepNode) and node.kind is StepKind.AGGREGATE:
                continue  # read when wanted; else late records go to the DLQ
            if not kids.get(output):
                out.append(
                    f"output {output!r} of {what} {node.name!r} is unused: "
                    "connect it (e.g. .to(...)) or remove it"
                )
        if isinstance(node, StepNode) and node.kind is StepKind.BRANCH:
            names = [n for n, _ in node.predicates] + ([node.default] if node.default else [])
            if len(set(names)) != len(names):
                out.append(f"branch {node.name!r} names an output twice: {names}")
    return out


def _tables(t: Topology) -> list[str]:
    """A table's changes (``Update`` objects) go to ``to_stream`` steps only, and those read
    nothing else; a table topic's records (tombstones among them) go to its table step."""
    out = []
    tables = (StepKind.AGGREGATE, StepKind.TABLE, StepKind.TABLE_JOIN)

    def is_table(name: str) -> bool:
        node = t.nodes.get(name)
        return isinstance(node, StepNode) and node.kind is StepKind.TABLE

    for src in t.sources:
        readers = [k for kids in t.children(src.name).values() for k in kids]
        if src.table and not all(is_table(k) for k in readers):
            out.append(f"table topic source {src.name!r} is read by its table step only")
    for node in t.steps:
        if node.kind is StepKind.TO_STREAM:
            parent = t.nodes.get(node.parents[0].node) if node.parents else None
            if not (isinstance(parent, StepNode) and parent.kind in tables):
                out.append(f"to_stream step {node.name!r} must read an aggregation's table")
        lookup = node.lookup
        if node.kind is StepKind.JOIN and lookup is not None and lookup.store not in t.stores:
            out.append(f"join {node.name!r} reads table {lookup.store!r}, not here")
        if node.kind in tables:
            for kid in t.children(node.name).get(node.outputs[0], []):
                child = t.nodes.get(kid)
                reading = (StepKind.TO_STREAM, StepKind.TABLE_JOIN)
                if not (isinstance(child, StepNode) and child.kind in reading):
                    out.append(
                        f"{kid!r} reads the changes of table {node.name!r}: "
                        "use .to_stream(fn) to make envelopes of them"
                    )
    return out


def _retries(t: Topology) -> list[str]:
    """A step's own retry policy with tiers is refused where no failure is retried: an
    aggregation and every step its updates (or late records) feed run within the
    aggregation's attempt, so a failure there dead-letters the aggregation's input record
    at once (``Topology.never_retried``). A topology-wide policy is not refused: it
    applies to the other steps, and ``describe`` says which it does not reach."""
    out = []
    for step in t.steps:
        aggregation = t.fed_by_aggregation(step.name)
        if step.retry is None or not step.retry.tiers or aggregation is None:
            continue
        out.append(
            f"step {step.name!r} cannot be retried: aggregation {aggregation!r} feeds it, "
            "so a failure there sends the aggregation's input record to the DLQ at once "
            "(a retry would meet a later stream time, its window maybe closed); drop its "
            "retry=, or write the updates to an owned topic with .to(owned(...)) and put "
            "retry= on a step after builder.source(owned(...)), which reads them back"
        )
    return out


def _schemas(t: Topology, catalog: CatalogLike) -> list[str]:
    out = []
    for step in t.steps:
        spec = step.aggregate
        if (
            spec is not None
            and spec.version is not None
            and not catalog.has(spec.type, spec.version)
        ):
            out.append(
                f"aggregation {step.name!r} keeps values of unknown schema "
                f"{spec.type}@{spec.version}"
            )
    uses: list[tuple[str, str, str, int]] = [
        (role, node.name, type_, version)
        for role, nodes in (("source", t.sources), ("sink", t.sinks))
        for node in nodes
        if node.type != ANY_TYPE  # repartition topics carry any type
        for type_, version in (
            node.reads.items() if isinstance(node, SourceNode) else [(node.type, node.version)]
        )
    ]
    for role, name, type_, version in uses:
        if catalog.has(type_, version):
            continue
        known = catalog.versions(type_) if _has_type(catalog, type_) else []
        have = (
            f"known versions: {', '.join(f'v{v}' for v in known)}"
            if known
            else f"no schemas/{type_}/ folder"
        )
        out.append(f"{role} {name!r} uses unknown schema {type_}@{version} ({have})")
    return out


def _has_type(catalog: CatalogLike, type_: str) -> bool:
    try:
        return bool(catalog.versions(type_))
    except LookupError:
        return False
