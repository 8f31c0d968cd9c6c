"""The process operator: a user's processor, a function ``(envelope, ctx)`` or an object
with ``process(envelope, ctx)``.

A class is instantiated once per plan (shared by both compilations of a timed plan), its
``init(ctx)`` called then and its ``close()`` when the plan closes. What ``process``
returns is forwarded to the only output (``ProcessorContext.emit``); an async one gets a
``CallContext`` (``streams.topology.execution.async_steps``). An exception fails the
record with the step's policy; a ``StepFailed`` from downstream passes unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streams.envelope import Envelope
from streams.topology.execution.async_steps import async_processor
from streams.topology.execution.calls import Run
from streams.topology.execution.context import ProcessorContext
from streams.topology.nodes import is_async
from streams.topology.policy import StepFailed

if TYPE_CHECKING:
    from streams.topology.execution.plan import Plan
    from streams.topology.nodes import StepNode


def build_process(plan: Plan, node: StepNode, outs: dict[str, Run]) -> Run:
    ctx = ProcessorContext(
        plan.topology.app_id,
        node.name,
        plan.current,
        outs,
        plan.stores,
        timers=plan.timers,
        reply=plan.replier(node.name),
    )
    target = plan.made(node.name, lambda: _processor(plan, node, ctx))
    method: Callable[[Envelope, ProcessorContext], Any] = getattr(target, "process", target)
    if is_async(method):
        method = async_processor(method, plan.awaiter, plan.limit(node))
    name, policy, emit = node.name, node.on_error, ctx.emit

    def process(env: Envelope) -> None:
        try:
            emit(method(env, ctx))
        except StepFailed:
            raise
        except Exception as exc:
            raise StepFailed(name, exc, policy) from exc

    return process


def _processor(plan: Plan, node: StepNode, ctx: ProcessorContext) -> Any:
    """The processor of ``node``, initialised with ``ctx`` (a class: an instance of it)."""
    target = node.fn() if isinstance(node.fn, type) else node.fn
    init = getattr(target, "init", None)
    if callable(init):
        init(ctx)
    close = getattr(target, "close", None)
    if callable(close):
        plan.on_close(close)
    return target
