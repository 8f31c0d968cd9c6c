"""Async steps: ``map``, ``filter``, ``flat_map``, ``peek`` and ``process`` given ``async def``
functions (``flat_map`` an async generator too).

A step's coroutine runs on an asyncio loop of its own thread (``LoopThread``), beside the
consumer loop; everything else of the record path (stores, outputs, the steps before and
after it) stays on the runtime's thread. A plan compiles an async function into a plain
callable (``sync_call``) that hands the coroutine to the plan's ``Awaiter`` and returns
what the coroutine returned, or raises what it raised:

- ``Blocking`` waits for it: one record at a time, as a sync step (concurrency 1);
- the runtime's concurrency step (``streams.pipeline.concurrency``) suspends the record
  instead, its whole call stack, and goes on with other records until the coroutine
  finished.

A coroutine gets values, never the runtime's objects: the envelope, and in an async
processor a ``CallContext`` (the record's metadata; ``forward`` and ``reply`` are kept and
done on the runtime's thread once the coroutine returned, in order; ``store`` raises, as
stores belong to the runtime's thread: read and write them in a sync step before or
after the async one).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import inspect
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from typing import Any, Protocol, TypeVar

from streams.envelope import CURRENT_CAUSE, Envelope
from streams.topology.errors import TopologyError
from streams.topology.execution.context import ProcessorContext, RecordMeta

T = TypeVar("T")


class StepLimit:
    """At most ``limit`` records at once in one async step (``map(fn, concurrency=N)``):
    what a rate-limited service takes. Kept by the awaiter that suspends records."""

    __slots__ = ("limit", "name", "running", "waiting")

    def __init__(self, name: str, limit: int) -> None:
        self.name = name
        self.limit = limit
        self.running = 0
        self.waiting: list[Any] = []  # what the awaiter resumes when a place frees, in order


class Awaiter(Protocol):
    """Runs one step's coroutine to its end, as the caller sees it; ``close`` stops what
    runs the coroutines (pending ones are cancelled)."""

    def __call__(self, coro: Coroutine[Any, Any, T], limit: StepLimit | None) -> T: ...
    def close(self) -> None: ...


class Call:
    """One coroutine handed to a ``LoopThread`` with ``spawn``: ``done(call)`` is called
    on the loop's thread when it finished, ``result``/``error`` set; ``cancel`` from any
    thread. It runs in a copy of the context it was made in, where the cause of the events
    it makes is the record in hand then (``streams.envelope.CURRENT_CAUSE``), whichever
    record the caller has moved on to meanwhile."""

    __slots__ = ("_loop", "context", "coro", "done", "error", "result", "task")

    def __init__(self, coro: Coroutine[Any, Any, Any], done: Callable[[Call], object]) -> None:
        self.coro: Coroutine[Any, Any, Any] | None = coro
        self.context = contextvars.copy_context()
        cause = CURRENT_CAUSE.get()
        if cause is not None:
            self.context.run(CURRENT_CAUSE.set, cause.pinned())
        self.done = done
        self.result: Any = None
        self.error: BaseException | None = None
        self.task: asyncio.Task[Any] | None = None  # once the loop started it
        self._loop: asyncio.AbstractEventLoop | None = None

    def outcome(self) -> Any:
        """What the coroutine returned; raises what it raised."""
        if self.error is not None:
            raise self.error
        return self.result

    def cancel(self) -> None:
        coro, self.coro = self.coro, None
        task, loop = self.task, self._loop
        if task is not None and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(task.cancel)
        elif coro is not None and task is None:
            coro.close()  # never started: nothing runs it

    def _finished(self, task: asyncio.Task[Any]) -> None:
        if task.cancelled():
            self.error = asyncio.CancelledError()
        else:
            self.error = task.exception()
            if self.error is None:
                self.result = task.result()
        self.done(self)


class LoopThread:
    """An asyncio event loop running on a daemon thread of its own. ``run`` and ``spawn``
    are safe from any thread; ``close`` cancels what still runs, stops the loop and joins
    the thread.

    ``spawn`` hands coroutines over in batches: one wake-up of the loop's thread (a write
    to its self-pipe, tens of µs) for whatever was spawned until it took them."""

    def __init__(self, name: str = "streams-async-steps") -> None:
        self._loop = asyncio.new_event_loop()
        self._spawned: deque[Call] = deque()
        self._woken = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and wait for it: what it returned, or raise what it
        raised."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def spawn(self, call: Call) -> None:
        """Start ``call``'s coroutine on the loop without waiting for it."""
        call._loop = self._loop
        self._spawned.append(call)
        if not self._woken:
            self._woken = True
            self._loop.call_soon_threadsafe(self._start_spawned)

    def _start_spawned(self) -> None:
        self._woken = False  # first: a spawn from now on wakes the loop again
        spawned, loop = self._spawned, self._loop
        while spawned:
            call = spawned.popleft()
            coro = call.coro
            if coro is None:  # cancelled before it started
                continue
            task = call.task = loop.create_task(coro, context=call.context)
            task.add_done_callback(call._finished)

    def close(self, timeout: float = 5.0) -> None:
        loop = self._loop
        if loop.is_closed():
            return

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        # A coroutine that ignores cancellation: the daemon thread dies with the process.
        with contextlib.suppress(concurrent.futures.TimeoutError, RuntimeError):
            asyncio.run_coroutine_threadsafe(cancel_all(), loop).result(timeout)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            loop.close()
        for call in self._spawned:  # spawned after the loop stopped: never to run
            call.cancel()


class Blocking:
    """The awaiter of one record at a time: waits for each coroutine on a ``LoopThread``."""

    def __init__(self, loop: LoopThread | None = None) -> None:
        self._loop = loop or LoopThread()

    def __call__(self, coro: Coroutine[Any, Any, T], limit: StepLimit | None) -> T:
        return self._loop.run(coro)

    def close(self) -> None:
        self._loop.close()


async def _collected(items: AsyncIterator[Any]) -> list[Any]:
    return [item async for item in items]


def sync_call(fn: Any, awaiter: Awaiter, limit: StepLimit | None) -> Callable[..., Any]:
    """``fn`` (async) as a plain callable with its arguments: what its coroutine returns
    (an async generator: the list of what it yields), awaited by ``awaiter``."""
    if inspect.isasyncgenfunction(fn) or inspect.isasyncgenfunction(
        getattr(fn, "__call__", None)  # noqa: B004
    ):

        def collect(*args: Any) -> Any:
            return awaiter(_collected(fn(*args)), limit)

        return collect

    def call(*args: Any) -> Any:
        return awaiter(fn(*args), limit)

    return call


def async_processor(
    method: Callable[..., Any], awaiter: Awaiter, limit: StepLimit | None
) -> Callable[[Envelope, ProcessorContext], Any]:
    """An async ``process(envelope, ctx)`` as a sync one: the coroutine gets a
    ``CallContext``; what it forwarded and replied is done on the caller's thread after it
    returned, in order, then its result is returned (to be forwarded as a sync
    processor's)."""
    call = sync_call(method, awaiter, limit)

    def process(env: Envelope, ctx: ProcessorContext) -> Any:
        call_ctx = CallContext(ctx)
        result = call(env, call_ctx)
        call_ctx.replay(ctx)
        return result

    return process


class CallContext:
    """What an async processor's coroutine gets as ``ctx`` (see the module docstring)."""

    __slots__ = ("_kept", "app_id", "node", "partition", "record")

    def __init__(self, ctx: ProcessorContext) -> None:
        self.app_id = ctx.app_id
        self.node = ctx.node
        self.record: RecordMeta = ctx.record
        self.partition: int = ctx.partition
        self._kept: list[tuple[str, Envelope, str | None]] = []

    def forward(self, envelope: Envelope, to: str | None = None) -> None:
        """Send ``envelope`` to the output ``to`` (or the only one) once the coroutine
        returned."""
        self._kept.append(("forward", envelope, to))

    def emit(self, result: Envelope | Iterable[Envelope] | None) -> None:
        """Forward ``result`` (None, an envelope, or an iterable of them) to the only
        output, once the coroutine returned."""
        if result is None:
            return
        for item in [result] if isinstance(result, Envelope) else result:
            self.forward(item)

    def reply(self, envelope: Envelope) -> None:
        """Reply ``envelope`` to the request being processed, once the coroutine returned."""
        self._kept.append(("reply", envelope, None))

    def store(self, name: str) -> Any:
        raise TopologyError(
            f"processor {self.node!r} is async: its coroutine runs beside the runtime's "
            f"thread, which owns store {name!r}; read and write it in a sync step before or "
            "after this one"
        )

    def schedule(self, *_args: Any, **_kwargs: Any) -> None:
        raise TopologyError(f"processor {self.node!r}: schedule timers in init()")

    def replay(self, ctx: ProcessorContext) -> None:
        """Do what the coroutine forwarded and replied, in order, through ``ctx``."""
        for what, envelope, to in self._kept:
            if what == "forward":
                ctx.forward(envelope, to)
            else:
                ctx.reply(envelope)
