"""One processing attempt: decode the record, run the plan, keep what it wrote.

``Attempt(record)`` decodes the record as its input topic's source declares and runs the
plan on the envelope, synchronously, on the caller's thread. Processors see the record
(``ctx.record``) and the stores of its input partition (``ctx.store``, dedup). The attempt
is atomic:

- success: returns None; ``record.outputs`` holds every output the sinks were handed, in
  the order the steps produced them, encoded; the stores keep their writes.
- failure: returns the ``StepFailed`` (where: ``decode`` or the step's name; the
  error; the step's own error policy); no output is kept and every store write of the
  attempt is rolled back, so a skipped, retried or dead-lettered record leaves no trace.
  The payload is decoded where a step first reads it: its errors are decode failures
  wherever they are raised.

A record known before its attempt to fail fails at once, to the DLQ whatever the policy:
one the crash guard condemned (``CrashLoopError``), one whose output the broker refused for
its sake when the work was done before (``OutputRefusedError``; ``refused``: the sink's
``refused_records``).

Raises only what is not a record's failure (a broken codec, ``StoreClosedError`` for a
partition that is not open).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from streams.codec import Codec, DecodeError
from streams.coordinates import Coordinates
from streams.envelope import Envelope
from streams.failures.errors import OutputRefusedError
from streams.failures.headers import Stage
from streams.failures.routing import Route
from streams.pipeline.crash_guard import CrashLoopError
from streams.pipeline.decode import Decode
from streams.pipeline.produce import Refusal
from streams.pipeline.record import Output, Record
from streams.state import StateManager
from streams.state.errors import StoreClosedError
from streams.state.transaction import PartitionTransaction
from streams.topology.execution.async_steps import Awaiter
from streams.topology.execution.plan import Plan
from streams.topology.execution.schedule import NoRecord, Timer
from streams.topology.execution.step_timer import StepTimer
from streams.topology.policy import StepFailed, dead_letter
from streams.topology.topology import Topology


class Aside(NamedTuple):
    """An attempt set aside while it awaits an async step (``Attempt.set_aside``)."""

    record: Any
    outputs: list[Output]
    touched: list[PartitionTransaction]
    undo: list[dict[bytes, Any] | None]


class Attempt:
    """Decodes and processes one record at a time (see the module docstring); with
    concurrency, several, each set aside while it awaits (``set_aside``)."""

    def __init__(
        self,
        topology: Topology,
        codec: Codec,
        state: StateManager | None,
        clock: Callable[[], float],
        step_timer: StepTimer | None = None,
        *,
        awaiter: Awaiter | None = None,
        refused: dict[Coordinates, Refusal] | None = None,
    ) -> None:
        self.codec = codec
        """Writes the outputs (and the failure policies' error replies)."""
        self._outputs: list[Output] = []
        self._touched: list[PartitionTransaction] = []
        routed = {}
        if state is not None:
            partition = self._partition
            routed = {n: state.routed(n, partition, self._touched) for n in topology.stores}
        self.plan = Plan(
            topology,
            self._emit,
            routed,
            clock=clock,
            timer=step_timer,
            payloads=getattr(codec, "payloads", None),  # the catalog's, for typed stores
            codec=codec,
            awaiter=awaiter,
        )
        self.decode = Decode(codec, self.plan.sources)
        """Reads a record as its source declares (``TimeOrder`` reads event times with it)."""
        self._refused: dict[Coordinates, Refusal] = {} if refused is None else refused
        self._sinks = {topology.topic(s.topic): s.name for s in topology.sinks}

    def _partition(self) -> int:
        record: Record | None = self.plan.current.record
        if record is None:
            raise RuntimeError("a state store was used outside of processing a record")
        return record.origin_partition

    def _emit(self, topic: str, env: Envelope) -> None:
        value, headers = self.codec.encode(env)
        key = env.key.encode() if env.key is not None else None
        self._outputs.append((topic, key, value, headers))

    def __call__(self, record: Record) -> StepFailed | None:
        po = record.offsets
        if po is not None and po.guard is not None and po.guard.condemned == record.offset:
            return _condemned(record, po.guard.limit)
        if self._refused:  # only after an output was refused: the work is done again
            refusal = self._refused.get(record.coordinates)
            if refusal is not None and refusal.alone:
                return self._refusal(refusal)
        try:
            env = self.decode(record)
        except DecodeError as exc:
            return StepFailed("decode", exc, None, Stage.DECODE)
        plan, touched = self.plan, self._touched
        plan.current.record = record
        try:
            plan.entries[record.origin_topic](env)
        except StepFailed as exc:
            self._undo()
            if isinstance(exc.error, DecodeError):  # the payload, decoded where first read
                return StepFailed("decode", exc.error, None, Stage.DECODE)
            return exc
        except BaseException:
            self._undo()
            raise
        finally:
            plan.current.record = None
        if touched:
            for tx in touched:
                tx.release()
            touched.clear()
        outputs = self._outputs
        if outputs:
            record.outputs = outputs
            self._outputs = []
        return None

    def timer(self, timer: Timer, partition: int, now_ms: int) -> list[Output] | StepFailed:
        """Run ``timer`` for input ``partition`` at ``now_ms``, atomically as an attempt:
        what it wrote (stores kept, outputs returned) or why it failed (nothing kept)."""
        plan = self.plan
        plan.current.record = NoRecord(partition)
        try:
            timer.run(now_ms)
        except StepFailed as exc:
            self._undo()
            return StepFailed(exc.step, exc.error, None)
        except StoreClosedError:
            self._undo()
            raise
        except Exception as exc:  # the timer's own function (outside any step)
            self._undo()
            return StepFailed(timer.node, exc, None)
        except BaseException:
            self._undo()
            raise
        finally:
            plan.current.record = None
        for tx in self._touched:
            tx.release()
        self._touched.clear()
        outputs, self._outputs = self._outputs, []
        return outputs

    def set_aside(self) -> Aside:
        """What the attempt in hand holds (its record, outputs so far, open savepoints),
        taken out of the way while it waits for an async step, so other records' attempts
        run meanwhile; ``take_back`` puts it back before it goes on."""
        touched = self._touched
        aside = Aside(
            self.plan.current.record, self._outputs, list(touched), [tx.undo for tx in touched]
        )
        for tx in touched:
            tx.undo = None
        touched.clear()
        self._outputs = []
        self.plan.current.record = None
        return aside

    def take_back(self, aside: Aside) -> None:
        """Resume the attempt ``set_aside`` returned (nothing else may be in hand)."""
        self.plan.current.record = aside.record
        self._outputs = aside.outputs
        self._touched.extend(aside.touched)
        for tx, undo in zip(aside.touched, aside.undo, strict=True):
            tx.undo = undo

    def _refusal(self, refusal: Refusal) -> StepFailed:
        """The failure of a record whose output was refused for its sake: to the DLQ,
        whatever the policy, as its sink's (a reply's when no sink writes that topic)."""
        error = OutputRefusedError(
            f"the broker refused its output to {refusal.topic}: {refusal.error.str()} "
            f"({refusal.error.name()})"
        )
        return StepFailed(self._sinks.get(refusal.topic, "reply"), error, dead_letter)

    def carry(self, route: Route) -> Route:
        """The route of this attempt's failure as written (a traced attempt gives a retry
        copy its trace context: ``streams.observability.otel``)."""
        return route

    def _undo(self) -> None:
        self._outputs.clear()
        for tx in self._touched:
            tx.rollback()
        self._touched.clear()

    @property
    def duplicates(self) -> int:
        """Records dropped by the plan's dedup steps so far."""
        return self.plan.duplicates

    def close(self) -> None:
        """Close the plan's class processors."""
        self.plan.close()


CRASH_GUARD_STEP = "crash-guard"


def _condemned(record: Record, limit: int) -> StepFailed:
    """The failure of a record the crash guard condemned: to the DLQ, whatever the policy."""
    error = CrashLoopError(
        f"the process died {limit} times in a row with {record.topic}[{record.partition}]"
        f"@{record.offset} in hand"
    )
    return StepFailed(CRASH_GUARD_STEP, error, dead_letter)
