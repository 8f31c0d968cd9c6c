"""The dedup operator: passes a record on the first time its id is seen within the step's
window (``stream.dedup(ttl=...)``), the others to its second output when declared.

The ids live in the step's own store (``streams.state.dedup.Dedup``, shared by both
compilations of a timed plan), with the plan's clock as "now"; an id function that
raises or returns neither str nor bytes fails the record with the step's policy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streams.envelope import Envelope
from streams.state.dedup import Dedup
from streams.topology.execution.calls import Run, noop
from streams.topology.policy import StepFailed

if TYPE_CHECKING:
    from streams.topology.execution.plan import Plan
    from streams.topology.nodes import StepNode


def _envelope_id(env: Envelope) -> str:
    return env.id


def build_dedup(plan: Plan, node: StepNode, outs: dict[str, Run]) -> Run:
    spec = node.dedup
    store = plan.store_of(node, spec.store if spec is not None else None)
    assert spec is not None  # a dedup step always has one (builder)
    dedup = plan.made(node.name, lambda: Dedup(store.transaction, spec.ttl))
    if dedup not in plan.dedups:
        plan.dedups.append(dedup)
    by: Callable[[Envelope], Any] = node.fn or _envelope_id
    first, clock = dedup.first, plan.clock
    nxt = outs[node.outputs[0]]
    duplicate = outs[node.outputs[1]] if len(node.outputs) > 1 else noop
    name, policy = node.name, node.on_error

    def dedup_step(env: Envelope) -> None:
        try:
            key = by(env)
            if not isinstance(key, (str, bytes)):
                raise TypeError(f"dedup id must be str or bytes, got {type(key).__name__}")
        except Exception as exc:
            raise StepFailed(name, exc, policy) from exc
        if first(key, clock()):
            nxt(env)
        else:
            duplicate(env)

    return dedup_step
