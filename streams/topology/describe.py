"""Forms of a topology: text (like Kafka Streams' ``Topology.describe()``), a Mermaid
flowchart, and plain data for JSON (``describe_data``). All list the topics the topology
reads, writes and owns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streams.topology.failure_topics import failure_topics
from streams.topology.nodes import (
    ANY_TYPE,
    DEFAULT_OUTPUT,
    Node,
    SinkNode,
    SourceNode,
    StepKind,
    StepNode,
)
from streams.topology.windows import AnyWindows, Sessions, Windows

if TYPE_CHECKING:
    from streams.topology.topology import Topology

CREATED_NOTE = (
    "created topics (owned, retry tiers, DLQs, changelogs) take the cluster's "
    "default.replication.factor (streams run --replication-factor N)"
)


def _what(t: Topology, node: Node) -> str:
    if isinstance(node, SourceNode | SinkNode):
        if isinstance(node, SourceNode):
            role, verb, label = "Source", "reads", node.label
        else:
            role, verb, label = "Sink", "writes", f"{node.type}@{node.version}"
        what = (
            "repartition: any envelope, by its new key"
            if node.type == ANY_TYPE
            else f"{verb} {label}"
        )
        return f"{role}: {node.name} (topic: {t.topic(node.topic)}, {what})"
    fn = node.describe_fn()
    detail = f"{'async ' if node.is_async else ''}{node.kind}"
    detail += f"{', ' + fn if fn and fn != node.name else ''}"
    if node.concurrency is not None:
        detail += f", at most {node.concurrency} at once"
    if node.dedup is not None:
        detail += f", ttl {node.dedup.ttl:g} s, store {node.dedup.store}"
    if node.aggregate is not None:
        detail += f": {node.aggregate.describe()}, store {node.aggregate.store}"
    if node.window_join is not None:
        detail += f": {node.window_join.describe()}, store {node.window_join.store}"
    if node.on_error is not None:
        detail += f", on_error: {getattr(node.on_error, '__name__', node.on_error)}"
    if node.retry is not None:
        detail += f", retry: {node.retry.describe()}"
    not_retried = _not_retried(t, node)
    if not_retried:
        detail += f", {not_retried}"
    return f"Processor: {node.name} ({detail})"


def _not_retried(t: Topology, node: StepNode) -> str | None:
    """Why the topology's retry policy does not reach step ``node``, when it has one with
    tiers and does not: an aggregation, and the steps its updates feed, are never retried
    (``Topology.never_retried``); their failures go to the DLQ at once."""
    aggregation = t.fed_by_aggregation(node.name)
    if t.retry is None or not t.retry.tiers or aggregation is None:
        return None
    if aggregation == node.name:
        return "not retried: an aggregation"
    return f"not retried: fed by aggregation {aggregation}"


def describe_text(t: Topology) -> str:
    lines = [f"Topology: {t.app_id}"]
    if t.description:
        lines.append(f"  {t.description}")
    for node in t.nodes.values():
        lines.append(f"  {_what(t, node)}")
        for out, kids in t.children(node.name).items():
            label = "" if out == DEFAULT_OUTPUT else f" [{out}]"
            if kids:
                lines.append(f"    -->{label} {', '.join(kids)}")
        if node.parents:
            lines.append(f"    <-- {', '.join(str(p) for p in node.parents)}")
    lines.append("Topics:")
    lines.append(f"  read:    {', '.join(t.topics_read) or '-'}")
    written = list(t.topics_written)
    if any(step.kind is StepKind.REPLY for step in t.steps):
        written.append("each request's reply-to topic")
    lines.append(f"  written: {', '.join(written) or '-'}")
    owned = [f"{o.name} ({o.purpose})" for o in t.owned_topics]
    lines.append(f"  owned:   {', '.join(owned) or '-'}")
    lines.append(f"  {CREATED_NOTE}")
    if t.stores:
        lines.append("Stores:")
        for name, spec in t.stores.items():
            lines.append(
                f"  {name} ({spec.backend}, changelog {t.changelog_topics[name]}"
                f", partitioned like {t.store_source(name)})"
            )
    lines.append("Failures:")
    if t.consumption == "share":
        lines.append(
            f"  share group: a failing record is delivered up to {t.deliveries} times, then "
            "goes to the DLQ (bad input at once)"
        )
    elif t.retry_policies:
        lines.append(f"  retry: {t.retry.describe() if t.retry else 'per step'}")
    else:
        lines.append("  retry: none (undecodable records and on_error='dlq' to the DLQ)")
    for tiers in failure_topics(t):
        retries = ", ".join(tiers.retries) or "-"
        lines.append(f"  {tiers.topic}: retry tiers {retries}; DLQ {tiers.dlq}")
    if t.processing_guarantee != "at_least_once":
        lines.append(f"Processing guarantee: {t.processing_guarantee}")
    if t.consumption == "share":
        lines.append("Consumption: share group (any instance takes any record; no per-key order)")
    if t.async_steps:
        lines.append(f"Concurrency: {_concurrency(t)}")
    return "\n".join(lines) + "\n"


_ORDERS = {
    "key": "one at a time per key",
    "partition": "one at a time per partition",
    "none": "in any order",
}


def _concurrency(t: Topology) -> str:
    if not t.concurrent:
        return "1 record at a time (async steps awaited one by one)"
    return f"up to {t.concurrency} records in flight, {_ORDERS[t.ordering]}"


def _node_data(t: Topology, node: Node) -> dict[str, Any]:
    data: dict[str, Any] = {"name": node.name}
    if isinstance(node, SourceNode | SinkNode):
        data["role"] = "source" if isinstance(node, SourceNode) else "sink"
        data["topic"] = t.topic(node.topic)
        data["type"] = None if node.type == ANY_TYPE else node.type
        data["version"] = None if node.type == ANY_TYPE else node.version
        if isinstance(node, SourceNode) and node.also:
            data["types"] = node.reads
        return data
    data["role"] = "processor"
    data["kind"] = node.kind.value
    data["function"] = node.describe_fn() or None
    if node.is_async:
        data["async"] = True
        data["concurrency"] = node.concurrency
    if node.dedup is not None:
        data["dedup"] = {"ttl_s": node.dedup.ttl, "store": node.dedup.store}
    spec = node.aggregate
    if spec is not None:
        data["aggregate"] = {
            "what": spec.what,
            "value": {"type": spec.type, "version": spec.version},
            "windows": _windows(spec.windows),
            "emit": spec.emit,
            "store": spec.store,
        }
    if node.on_error is not None:
        data["on_error"] = str(getattr(node.on_error, "__name__", node.on_error))
    if node.retry is not None:
        data["retry"] = node.retry.describe()
    not_retried = _not_retried(t, node)
    if not_retried:
        data["not_retried"] = not_retried.removeprefix("not retried: ")
    return data


def describe_data(t: Topology) -> dict[str, Any]:
    """The topology as plain data (``streams describe --json``): nodes, links (one per
    parent to child edge, with the parent's output), topics, stores and failure topics."""
    links = [
        {"from": node.name, "output": out, "to": kid}
        for node in t.nodes.values()
        for out, kids in t.children(node.name).items()
        for kid in kids
    ]
    return {
        "app_id": t.app_id,
        "description": t.description or None,
        "processing_guarantee": t.processing_guarantee,
        "consumption": t.consumption,
        "deliveries": t.deliveries if t.consumption == "share" else None,
        "concurrency": t.concurrency,
        "ordering": t.ordering,
        "nodes": [_node_data(t, node) for node in t.nodes.values()],
        "links": links,
        "topics": {
            "read": t.topics_read,
            "written": t.topics_written,
            "owned": [{"name": o.name, "purpose": o.purpose} for o in t.owned_topics],
        },
        "stores": [
            {
                "name": name,
                "backend": spec.backend,
                "changelog": t.changelog_topics[name],
                "partitioned_like": t.store_source(name),
            }
            for name, spec in t.stores.items()
        ],
        "failures": {
            "retry": t.retry.describe() if t.retry else None,
            "topics": {
                tiers.topic: {"retry": list(tiers.retries), "dlq": tiers.dlq}
                for tiers in failure_topics(t)
            },
        },
    }


def _id(prefix: str, name: str) -> str:
    return prefix + "".join(c if c.isalnum() else "_" for c in name)


def _quote(text: str) -> str:
    return '"' + text.replace('"', "#quot;") + '"'


def describe_mermaid(t: Topology) -> str:
    lines = ["flowchart LR"]
    owned = {o.name for o in t.owned_topics}
    for topic in dict.fromkeys([*t.topics_read, *t.topics_written]):
        tag = " (owned)" if topic in owned else ""
        lines.append(f"  {_id('t_', topic)}[({_quote(topic + tag)})]")
    for node in t.nodes.values():
        nid = _id("n_", node.name)
        if isinstance(node, SourceNode):
            lines.append(f"  {nid}[/{_quote(f'{node.name}: {node.label}')}/]")
            lines.append(f"  {_id('t_', t.topic(node.topic))} --> {nid}")
        elif isinstance(node, SinkNode):
            lines.append(f"  {nid}[\\{_quote(f'{node.name}: {node.type}@{node.version}')}\\]")
            lines.append(f"  {nid} --> {_id('t_', t.topic(node.topic))}")
        elif isinstance(node, StepNode):
            shape = ("{", "}") if node.kind == "branch" else ("[", "]")
            lines.append(f"  {nid}{shape[0]}{_quote(f'{node.name} ({node.kind})')}{shape[1]}")
        for out, kids in t.children(node.name).items():
            arrow = "-->" if out == DEFAULT_OUTPUT else f"-->|{out}|"
            for kid in kids:
                lines.append(f"  {nid} {arrow} {_id('n_', kid)}")
    return "\n".join(lines) + "\n"


def _windows(windows: AnyWindows | None) -> dict[str, Any] | None:
    if windows is None:
        return None
    data: dict[str, Any] = {"kind": windows.kind}
    if isinstance(windows, Sessions):
        data["gap_s"] = windows.gap_ms / 1000
    else:
        data["size_s"] = windows.size_ms / 1000
    if isinstance(windows, Windows):
        data["advance_s"] = windows.advance_ms / 1000
    data["grace_s"] = windows.grace_ms / 1000
    return data
