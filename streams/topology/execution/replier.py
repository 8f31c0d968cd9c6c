"""What sends a reply to the request being processed, for a reply step or ``ctx.reply``.

The reply goes to the topic the request's ``reply-to`` header names, with its correlation
id (``streams.topology.reply``), as one of the record's outputs: through the plan's
writer, so with the topology's guarantee, and not at all when the attempt fails. A record
that is no request fails the step with ``NotARequestError``, to the dead-letter topic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from streams.envelope import Envelope
from streams.topology.execution.calls import Emit
from streams.topology.execution.context import Current
from streams.topology.policy import StepFailed, dead_letter
from streams.topology.reply import REPLY_TO, NotARequestError, request_of

if TYPE_CHECKING:
    from streams.topology.execution.calls import Run
    from streams.topology.execution.plan import Plan
    from streams.topology.nodes import StepNode


def replier(current: Current, emit: Emit, step: str) -> Callable[[Envelope], None]:
    """The function that sends ``envelope`` as the reply to the record ``current`` holds,
    for step ``step`` (what ``ctx.reply`` and a reply step call)."""

    def reply(env: Envelope) -> None:
        request = request_of(current.record.meta.headers)
        if request is None:
            error = NotARequestError(f"a reply to a record without a {REPLY_TO!r} header")
            raise StepFailed(step, error, dead_letter)
        correlation = request.correlation_id or env.correlation_id
        if correlation is not None and env.correlation_id != correlation:
            env = replace(env, correlation_id=correlation)
        emit(request.reply_to, env)

    return reply


def build_reply(plan: Plan, node: StepNode, _outs: dict[str, Run]) -> Run:
    """A reply step: each envelope is sent as the reply to the request in hand."""
    return plan.replier(node.name)
