"""Table steps and joins with tables: what they do with the tables' stores.

``builder.table(topic, ...)`` adds a table step that puts each record's payload (typed, see
``streams.topology.values``) under its key and deletes the key on a tombstone;
``stream.join(table, fn)`` / ``left_join`` read the table's store partition of the
record's partition by the record key; ``table.join(other, fn)`` pairs the two tables'
values of a key whenever either changes. The topics are co-partitioned (see
``streams.topology.tables.copartition_problems``); ``sides`` tells a two-sided join's
parents apart by the topic the record in hand came from (windowed joins use it too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streams.envelope import Envelope, Tombstone
from streams.topology.errors import TopologyError
from streams.topology.execution.calls import Run
from streams.topology.execution.checks import key_of, output
from streams.topology.policy import StepFailed
from streams.topology.stores import upstream_sources
from streams.topology.values import value_codec
from streams.topology.windows import Update

if TYPE_CHECKING:
    from streams.topology.execution.plan import Plan
    from streams.topology.nodes import StepNode
    from streams.topology.specs import Lookup


def sides(plan: Plan, node: StepNode) -> tuple[set[str], set[str]]:
    """The source topics of the left and of the right parent of a two-sided join."""
    left, right = (set(upstream_sources(plan.topology, e.node)) for e in node.parents)
    if left & right:
        raise TopologyError(
            f"join {node.name!r} reads {sorted(left & right)} on both sides: a join of two "
            "streams or tables needs them from different topics"
        )
    return left, right


def _lookup(plan: Plan, node: StepNode) -> tuple[Lookup, Any]:
    """The table a table or join step writes or reads, and its store."""
    spec = node.lookup
    store = plan.store_of(node, spec.store if spec is not None else None)
    assert spec is not None  # a table or join step always has one (builder)
    return spec, store


def build_table(plan: Plan, node: StepNode, outs: dict[str, Run]) -> Run:
    """Materialise a table topic: each key's latest value, a tombstone deletes it."""
    spec, store = _lookup(plan, node)
    encode, _ = value_codec(spec.type, spec.version, plan.payloads)
    updated: Callable[[Update], None] = outs[node.outputs[0]]  # type: ignore[assignment]
    name, policy = node.name, node.on_error

    def table_step(env: Envelope) -> None:
        key = key_of(env, name, f"table {name!r} holds values by key")
        tx = store.transaction()
        if isinstance(env, Tombstone):
            if tx.get(key) is not None:
                tx.delete(key)
                updated(Update(key, None, None, False, env))
            return
        try:
            value = dict(env.data)
            tx.set(key, encode(value))
        except Exception as exc:
            raise StepFailed(name, exc, policy) from exc
        updated(Update(key, value, None, False, env))

    return table_step


def build_join(plan: Plan, node: StepNode, outs: dict[str, Run]) -> Run:
    """Each record with the value its key has in the table now (see ``Lookup``)."""
    spec, table = _lookup(plan, node)
    _, decode = value_codec(spec.type, spec.version, plan.payloads)
    fn, nxt, name, policy = node.fn, outs[node.outputs[0]], node.name, node.on_error
    inner = spec.inner

    def join_step(env: Envelope) -> None:
        key = env.key
        raw = table.get(key) if key is not None else None
        if raw is None and inner:
            return  # an inner join: no value, no output
        try:
            out = output(fn(env, None if raw is None else decode(raw)), "a join")
        except Exception as exc:
            raise StepFailed(name, exc, policy) from exc
        if out is not None:
            nxt(out)

    return join_step


def build_table_join(plan: Plan, node: StepNode, outs: dict[str, Run]) -> Run:
    """Each change of either table, with the other's value of its key: ``fn(left, right)``
    when both have one (an inner join); a key deleted on either side is deleted here."""
    spec = node.table_join
    if spec is None:
        raise TopologyError(f"table join {node.name!r} names no tables")
    stores = [plan.store_of(node, s.store) for s in (spec.left, spec.right)]
    decoders = [value_codec(s.type, s.version, plan.payloads)[1] for s in (spec.left, spec.right)]
    left_topics, _ = sides(plan, node)
    fn, name, policy, current = node.fn, node.name, node.on_error, plan.current
    updated: Callable[[Update], None] = outs[node.outputs[0]]  # type: ignore[assignment]

    def table_join_step(update: Update) -> None:
        side = 0 if current.record.origin_topic in left_topics else 1
        raw = stores[1 - side].get(update.key)
        if raw is None:
            return  # nothing to pair with, nothing paired before
        if update.value is None:
            updated(Update(update.key, None, None, False, update.cause))
            return
        other = decoders[1 - side](raw)
        left, right = (update.value, other) if side == 0 else (other, update.value)
        try:
            value = fn(left, right)
        except Exception as exc:
            raise StepFailed(name, exc, policy) from exc
        updated(Update(update.key, value, None, False, update.cause))

    return table_join_step  # type: ignore[return-value]  # it reads Updates, not envelopes
