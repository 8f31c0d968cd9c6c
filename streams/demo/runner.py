"""Runs the demo: the broker step, then every step of ``STEPS`` in order.

The demo runs against ``KAFKA_BOOTSTRAP_SERVERS`` when set, else the local broker on the
default port (started if needed and left running, so you can look around afterwards).
The steps read the example topologies and schemas shipped in ``streams.examples``, so the
demo works from an installed wheel: for the run, ``STREAMS_SCHEMAS`` points at the
example schemas (every ``default_catalog()`` of the topologies and the runtime loads them),
and is restored afterwards. The topics named through the context are deleted at the end,
also when a step fails; a step's RuntimeError propagates after that.

The tour prints its own lines only. The log lines of what it runs (the instances'
warnings when the cluster step kills a node: partitions lost, a commit refused) go to a
file of the run, ``streams-demo-<run id>.log`` in the temporary folder, named at the end
when anything was written there (and removed when nothing was).
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from streams.broker import LocalBroker
from streams.cluster import admin_client, delete_app_topics
from streams.config import external_bootstrap
from streams.demo.cluster import step_cluster
from streams.demo.concurrency import step_concurrency
from streams.demo.context import DemoContext, step_line
from streams.demo.exactly_once import step_exactly_once
from streams.demo.failures import step_failures
from streams.demo.faust import step_faust
from streams.demo.observability import step_observability
from streams.demo.projections import step_projections
from streams.demo.refused import step_refused
from streams.demo.replay import step_replay
from streams.demo.requests import step_requests
from streams.demo.round_trip import step_round_trip
from streams.demo.schemas import step_schemas
from streams.demo.shell import step_shell
from streams.demo.state import step_state
from streams.demo.tables import step_tables
from streams.demo.testing import step_testing
from streams.demo.timers import step_timers
from streams.demo.topology import step_topology
from streams.demo.windows import step_windows
from streams.demo.work_queue import step_work_queue
from streams.errors import StreamsError
from streams.examples import example_schemas
from streams.schemas import SCHEMAS_DIR_ENV

STEPS: list[Callable[[DemoContext], None]] = [
    step_round_trip,
    step_schemas,
    step_shell,
    step_topology,
    step_observability,
    step_faust,
    step_failures,
    step_state,
    step_refused,
    step_exactly_once,
    step_windows,
    step_timers,
    step_tables,
    step_requests,
    step_projections,
    step_work_queue,
    step_concurrency,
    step_replay,
    step_cluster,
    step_testing,
]


def step_broker(console: Console) -> str:
    """Step 1: the bootstrap servers, starting the local broker when none are given."""
    external = external_bootstrap()
    if external:
        console.print(step_line(1, "broker", f"using KAFKA_BOOTSTRAP_SERVERS={external}"))
        return external
    broker = LocalBroker()
    with console.status("starting the local Apache Kafka broker"):
        result = broker.up()
    how = "already running" if result.already_running else f"started in {result.seconds:.1f} s"
    console.print(
        step_line(
            1,
            "broker",
            f"Apache Kafka {broker.version} at {broker.bootstrap} ({how}); "
            "`streams broker down` stops it",
        )
    )
    return broker.bootstrap


@contextmanager
def _example_catalog() -> Iterator[None]:
    before = os.environ.get(SCHEMAS_DIR_ENV)
    os.environ[SCHEMAS_DIR_ENV] = str(example_schemas())
    try:
        yield
    finally:
        if before is None:
            del os.environ[SCHEMAS_DIR_ENV]
        else:
            os.environ[SCHEMAS_DIR_ENV] = before


def step_name(step: Callable[[DemoContext], None]) -> str:
    """What ``streams demo --only`` calls a step: ``work-queue`` for ``step_work_queue``."""
    return step.__name__.removeprefix("step_").replace("_", "-")


def chosen_steps(only: Sequence[str] | None) -> list[Callable[[DemoContext], None]]:
    """The steps named in ``only`` (None: all), in the tour's order. Raises StreamsError
    naming the steps there are for a name that is none of them."""
    if not only:
        return list(STEPS)
    names = {step_name(step): step for step in STEPS}
    unknown = [name for name in only if name not in names]
    if unknown:
        raise StreamsError(
            f"no demo step {', '.join(map(repr, unknown))} (steps: {', '.join(names)})"
        )
    return [step for name, step in names.items() if name in only]


def run_demo(console: Console | None = None, only: Sequence[str] | None = None) -> None:
    """Run every step (or those named in ``only``) on the broker, printing one numbered
    line (or more) per step."""
    console = console or Console()
    steps = chosen_steps(only)
    bootstrap = step_broker(console)
    ctx = DemoContext(bootstrap=bootstrap, console=console)
    log_file = Path(tempfile.gettempdir()) / f"streams-{ctx.prefix}.log"
    try:
        with _example_catalog(), _logs_to(log_file):
            for step in steps:
                step(ctx)
    finally:
        delete_app_topics(admin_client(bootstrap), ctx.prefix)
        _name_the_logs(console, log_file)
    console.print(Text("demo done", style="bold green"))


@contextmanager
def _logs_to(path: Path) -> Iterator[None]:
    """Streams' log handler (``configure_logging``'s, on the root logger) writes to
    ``path`` instead of stderr while the block runs, in the format it had; without one
    (logging not configured: Python would print warnings to stderr), a plain handler."""
    root = logging.getLogger()
    handlers = [
        h
        for h in root.handlers
        if getattr(h, "_streams_handler", False) and isinstance(h, logging.StreamHandler)
    ]
    with open(path, "a", encoding="utf-8") as file:
        before = [(handler, _set_stream(handler, file)) for handler in handlers]
        added = None if handlers else logging.StreamHandler(file)
        if added is not None:
            root.addHandler(added)
        try:
            yield
        finally:
            for handler, stream in before:
                _set_stream(handler, stream)
            if added is not None:
                root.removeHandler(added)


def _set_stream(handler: logging.StreamHandler[Any], stream: Any) -> Any:
    """``handler.setStream(stream)``, but one whose stream was closed meanwhile (a handler
    of an earlier run in this process, its stderr gone) is switched without a flush."""
    try:
        return handler.setStream(stream)
    except ValueError:
        with handler.lock or nullcontext():
            old, handler.stream = handler.stream, stream
        return old


def _name_the_logs(console: Console, path: Path) -> None:
    """One line naming the run's log file when it holds anything; else it goes."""
    try:
        lines = len(path.read_text(encoding="utf-8").splitlines())
    except OSError:
        return
    if not lines:
        path.unlink(missing_ok=True)
        return
    counted = f"{lines} line" if lines == 1 else f"{lines} lines"
    console.print(Text(f"logs of the tour's instances ({counted}): {path}", style="dim"))
