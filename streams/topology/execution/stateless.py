"""The stateless operators: map, filter, flat_map, peek, rekey and branch.

Each ``build_<kind>(plan, node, outs)`` compiles one step into a ``Run`` that calls the
step's function (an async one through the plan's awaiter: ``Plan.function``) and hands
what it made to the next node before it returns. A function that raises fails the record
as ``StepFailed`` with the step's own policy; nothing here keeps state between records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streams.envelope import Envelope
from streams.topology.execution.calls import Run, noop
from streams.topology.policy import StepFailed

if TYPE_CHECKING:
    from streams.topology.execution.plan import Plan
    from streams.topology.nodes import StepNode


def build_map(plan: Plan, node: StepNode, outs: dict[str, Run]) -> Run:
    fn, nxt, name, policy = plan.function(node), outs[node.outputs[0]], node.name, node.on_error

    def map_step(env: Envelope) -> None:
        try:
            result = fn(env)
        except Exception as exc:
            raise StepFailed(name, exc, policy) from exc
        nxt(result)

    return map_step


def build_filter(plan: Plan, node: StepNode, outs: dict[str, Run]) -> Run:
    fn, nxt, name, policy = plan.function(node), outs[node.outputs[0]], node.name, node.on_error

    def filter_step(env: Envelope) -> None:
        try:
            keep = fn(env)
        except Exception as exc:
            raise StepFailed(name, exc, policy) from exc
        if keep:
            nxt(env)

    return filter_step


def build_flat_map(plan: Plan, node: StepNode, outs: dict[str, Run]) -> Run:
    fn, nxt, name, policy = plan.function(node), outs[node.outputs[0]], node.name, node.on_error

    def flat_map_step(env: Envelope) -> None:
        try:
            items = list(fn(env))
        except Exception as exc:
            raise StepFailed(name, exc, policy) from exc
        for item in items:
            nxt(item)

    return flat_map_step


def build_peek(plan: Plan, node: StepNode, outs: dict[str, Run]) -> Run:
    fn, nxt, name, policy = plan.function(node), outs[node.outputs[0]], node.name, node.on_error

    def peek_step(env: Envelope) -> None:
        try:
            fn(env)
        except Exception as exc:
            raise StepFailed(name, exc, policy) from exc
        nxt(env)

    return peek_step


def build_rekey(_plan: Plan, node: StepNode, outs: dict[str, Run]) -> Run:
    fn, nxt, name, policy = node.fn, outs[node.outputs[0]], node.name, node.on_error

    def rekey_step(env: Envelope) -> None:
        try:
            key = fn(env)
            if not isinstance(key, str):
                raise TypeError(f"rekey function must return a str, got {type(key).__name__}")
        except Exception as exc:
            raise StepFailed(name, exc, policy) from exc
        nxt(env.with_data(env.data, key=key))

    return rekey_step


def build_branch(_plan: Plan, node: StepNode, outs: dict[str, Run]) -> Run:
    routes = [(pred, outs[out]) for out, pred in node.predicates]
    default = outs[node.default] if node.default else noop
    name, policy = node.name, node.on_error

    def branch_step(env: Envelope) -> None:
        try:
            nxt = default
            for pred, route in routes:
                if pred(env):
                    nxt = route
                    break
        except Exception as exc:
            raise StepFailed(name, exc, policy) from exc
        nxt(env)

    return branch_step
