"""``streams ARGS`` as a user's shell runs it: in the test's own process (``streams``), or
as the installed console script in a process of its own (``streams_process``).

Starting an interpreter and importing the command tree costs a second or two on a busy
machine, about as long as most commands take; the suites call the command some hundred
times. So a test whose point is what a command does (its output, exit code, one-line
error) runs it in-process; a test whose point is the process itself (the console script
and the status the shell sees, signals, a crash, what is left on file descriptor 2 once
the process is gone) starts one.

A run in-process goes through ``streams.cli.main``, the console script's entry point, so
errors become the same one line and exit status; an exception ``main`` does not handle (a
bug, which a real process would end on with a traceback and status 1) is raised into the
test. Its ``stderr`` is what was printed to ``sys.stderr``, then what was written straight
to file descriptor 2 during the run (librdkafka's own lines, had a client been made
without Streams' logger), so a test that no such line reached the user still holds.

What a process would leave behind when it exits is put back after every run, so runs stay
as independent as processes are (a pytest-xdist worker runs many tests in one process):

- the environment (``use_schemas`` exports ``$STREAMS_SCHEMAS``; the next command would
  read that folder rather than find its own), the working folder and ``sys.argv``;
- logging: the root logger's handlers and level (``configure_logging`` adds a handler on
  this run's stderr, closed once the run is over) and structlog's configuration;
- the schema catalogs loaded (cached per folder: a test may change a folder between runs).

Standard input is a pipe, empty unless given, as in a script, never a terminal.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from unittest.mock import patch

import structlog
from click.testing import CliRunner

from streams import cli

# Imported before any run: on import it routes structlog into stdlib logging (unless
# configured already), the state a run's ``configure_logging`` is undone back to.
from streams import logs as _logs  # noqa: F401
from streams.cli import _common
from streams.schemas import catalog

# The terminal's width unless told: wide enough that no table row wraps.
COLUMNS = 200
# The project folder, where a command runs unless told: its schemas/ and topology/ are found
# there as in a user's checkout.
ROOT = Path(__file__).resolve().parents[1]
# The console script pip installed next to this interpreter, as a user's shell finds it.
SCRIPT = Path(sys.executable).with_name("streams")


@dataclass(frozen=True)
class Run:
    """How a command ended: named as ``subprocess.CompletedProcess`` names them, so a test
    reads a run here and a real process's the same way."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        """Everything printed, stdout then stderr."""
        return self.stdout + self.stderr


def streams(
    *args: str,
    bootstrap: str | None = None,
    env: Mapping[str, str | None] | None = None,
    stdin: str | None = None,
    cwd: Path = ROOT,
    columns: int = COLUMNS,
) -> Run:
    """``streams ARGS`` in this process, from folder ``cwd``, with ``stdin`` on standard
    input, against the cluster at ``bootstrap`` (given as users give it, in
    ``$KAFKA_BOOTSTRAP_SERVERS``), with this process's environment updated by ``env`` (a
    None value unsets the variable), on a terminal ``columns`` wide."""
    # Process state is put back last: isolation restores sys.stdin/stdout/stderr first.
    isolated = CliRunner().isolation(input=stdin, env=_overrides(bootstrap, env, columns))
    with (
        _process_state(cwd),
        _plain_consoles(columns),
        _fd2_kept() as fd2,
        isolated as (out, err, _),
        _console_script(args),
    ):
        code = _exit_code_of(cli.main)
        # what is still in the text buffers, as a process's exit would write it
        sys.stdout.flush()
        sys.stderr.flush()
    return Run(code, out.getvalue().decode(), err.getvalue().decode() + fd2.getvalue().decode())


def streams_process(
    *args: str,
    bootstrap: str | None = None,
    env: Mapping[str, str | None] | None = None,
    stdin: str | None = None,
    cwd: Path = ROOT,
    timeout: float = 120,
) -> Run:
    """``streams ARGS`` as the installed console script, in a process of its own; the rest
    as ``streams``. For a test whose point is the process (see the module docstring)."""
    environ = {**os.environ}
    for name, value in _overrides(bootstrap, env, COLUMNS).items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value
    done = subprocess.run(
        [SCRIPT, *args],
        # never the terminal pytest runs from; nothing to read unless given (a broker the
        # command starts inherits it: /dev/null, not a pipe of this process)
        **({"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}),
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environ,
        timeout=timeout,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def _overrides(
    bootstrap: str | None, env: Mapping[str, str | None] | None, columns: int
) -> dict[str, str | None]:
    """What a run changes in the environment: the terminal's width, ``env``, the cluster."""
    overrides = {"COLUMNS": str(columns), **(env or {})}
    if bootstrap is not None:
        overrides["KAFKA_BOOTSTRAP_SERVERS"] = bootstrap
    return overrides


def _exit_code_of(main: Callable[[], None]) -> int:
    """The exit status ``main()`` ends with, as a process's (``sys.exit`` semantics)."""
    try:
        main()
    except SystemExit as exc:
        if exc.code is None:
            return 0
        if isinstance(exc.code, int):
            return exc.code
        # sys.exit("message"): Python prints the message to stderr and exits with 1
        print(exc.code, file=sys.stderr)
        return 1
    return 0


@contextlib.contextmanager
def _process_state(cwd: Path) -> Iterator[None]:
    """Put back what a command changes in the process (see the module docstring)."""
    environ = dict(os.environ)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    structlog_config = structlog.get_config()
    try:
        with contextlib.chdir(cwd):
            yield
    finally:
        os.environ.clear()
        os.environ.update(environ)
        root.handlers[:] = handlers
        root.setLevel(level)
        structlog.configure(**structlog_config)
        catalog._load_cached.cache_clear()


@contextlib.contextmanager
def _fd2_kept() -> Iterator[io.BytesIO]:
    """File descriptor 2 pointed at a file for the run, and what was written there in the
    buffer yielded once it is over: a C library writes there, past ``sys.stderr``."""
    written = io.BytesIO()
    with tempfile.TemporaryFile() as kept:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(kept.fileno(), 2)
        try:
            yield written
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            kept.seek(0)
            written.write(kept.read())


@contextlib.contextmanager
def _console_script(args: tuple[str, ...]) -> Iterator[None]:
    """``sys.argv`` and ``__main__`` as the ``streams`` console script has them: click names
    the program in its usage lines from both (under ``python -m pytest`` it would say
    ``python -m pytest.streams``); the script's ``__main__`` is in no package."""
    main = sys.modules["__main__"]
    # Not patch.dict on sys.modules: undoing it would also drop the modules the run imported.
    sys.modules["__main__"] = ModuleType("__main__")
    try:
        with patch.object(sys, "argv", ["streams", *args]):
            yield
    finally:
        sys.modules["__main__"] = main


@contextlib.contextmanager
def _plain_consoles(columns: int) -> Iterator[None]:
    """The commands' rich consoles as a pipe would make them: ``columns`` wide, no colour.
    They were made once, at import, from whatever this process's terminal was then."""
    with contextlib.ExitStack() as stack:
        for console in (_common.console, _common.err_console):
            stack.enter_context(patch.object(console, "_width", columns))
            stack.enter_context(patch.object(console, "_color_system", None))
        yield
