"""Run a topology in the background for a test: ``streams run FILE`` as a child process.

A child process, not a thread: the runtime installs signal handlers and owns its clients,
and stopping it with SIGTERM exercises the same clean shutdown as in production (commit
what was processed, close the consumer so the group rebalances at once).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from streams.errors import StreamsError
from streams.testing.wait import wait_until

# The runtime's log events, in console or JSON form. "started" is logged once its signal
# handlers are in place and it has subscribed; "partitions assigned" once it owns input.
_EVENTS = {
    "started": re.compile(r'(\]\s+started\s|"event":\s*"started")'),
    "partitions assigned": re.compile(
        r'(\]\s+partitions assigned\s|"event":\s*"partitions assigned")'
    ),
}


class TopologyProcessError(StreamsError):
    """The background topology exited on its own, or did not stop when asked."""


class TopologyProcess:
    """``streams run <path>`` against ``bootstrap``, from ``start()`` to ``stop()``.

    ``start()`` returns as soon as the process is launched; ``wait_started()`` blocks
    until the runtime has subscribed (and, with ``assigned=True``, owns partitions). A
    new group reads from the earliest offset, so input produced right after the start is
    not missed. Wait for its output with ``streams.testing.wait_for_records`` and such.

    ``stop()`` sends SIGTERM and waits up to ``timeout`` seconds for a clean exit (then
    SIGKILL); ``kill()`` sends SIGKILL at once, as a crash would. ``check()`` raises
    ``TopologyProcessError`` with the process's output when
    it has exited by itself. ``output()`` is everything it printed so far.

    ``command``: the ``streams`` command that runs the file (``("projections",
    "rebuild")`` runs a rebuild, which runs an instance too).
    """

    def __init__(
        self,
        path: str | Path,
        bootstrap: str,
        *,
        app_id: str | None = None,
        settings: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        command: Sequence[str] = ("run",),
    ) -> None:
        self.path = Path(path)
        self.subcommand = list(command)
        self.bootstrap = bootstrap
        self.app_id = app_id
        self.settings = dict(settings or {})
        self.args = list(args)
        self.env = dict(env or {})
        self.cwd = Path(cwd) if cwd else None
        self.returncode: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = tempfile.NamedTemporaryFile(prefix="streams-run-", suffix=".log")  # noqa: SIM115

    @property
    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "streams", *self.subcommand, str(self.path)]
        cmd += ["--bootstrap", self.bootstrap, "--no-status"]
        if self.app_id:
            cmd += ["--app-id", self.app_id]
        cmd += [f"--set={k}={v}" for k, v in self.settings.items()]
        return cmd + self.args

    def start(self) -> TopologyProcess:
        if self._proc is not None:
            raise TopologyProcessError(f"{self.path} is already running")
        env = {**os.environ, "STREAMS_LOG_LEVEL": "INFO", **self.env}
        # Plain text logs in the captured output, whatever the test runner's terminal is.
        env.setdefault("STREAMS_LOG_JSON", "0")
        self._proc = subprocess.Popen(
            self.command,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=self.cwd,
        )
        return self

    def wait_started(self, timeout: float = 60.0, *, assigned: bool = False) -> None:
        """Block until the runtime logs that it started (``assigned``: owns partitions).

        Raises ``TopologyProcessError`` with its output as soon as the process exits, and
        ``WaitTimeoutError`` after ``timeout`` seconds.
        """
        pattern = _EVENTS["partitions assigned" if assigned else "started"]

        def seen() -> bool:
            if pattern.search(self.output()):
                return True
            self.check()
            return False

        what = f"`streams run {self.path}` " + ("owning partitions" if assigned else "starting")
        wait_until(seen, timeout, interval=0.05, what=what, seen=lambda: self.output(10))

    @property
    def pid(self) -> int | None:
        """The process's id while it has not been stopped (its children's parent)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def check(self) -> None:
        """Raise ``TopologyProcessError`` (with its output) if the process has exited."""
        if self._proc is not None and self._proc.poll() is not None:
            raise TopologyProcessError(
                f"`streams run {self.path}` exited with {self._proc.returncode} while the "
                f"test still needed it; its output:\n{self.output(40)}"
            )

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, wait up to ``timeout`` s, then SIGKILL; returns the exit code.

        Stopping a stopped process returns its exit code again.
        """
        proc = self._proc
        if proc is None:
            return self.returncode if self.returncode is not None else 0
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                self._proc = None
                self.returncode = proc.returncode
                raise TopologyProcessError(
                    f"`streams run {self.path}` did not stop within {timeout:g} s of SIGTERM "
                    f"and was killed; its output:\n{self.output(40)}"
                ) from None
        self._proc = None
        self.returncode = proc.returncode
        return proc.returncode

    def kill(self) -> int:
        """SIGKILL, as a crash would end it (no commit, no flush); returns the exit code."""
        proc = self._proc
        if proc is None:
            return self.returncode if self.returncode is not None else 0
        proc.kill()
        proc.wait()
        self._proc = None
        self.returncode = proc.returncode
        return proc.returncode

    def output(self, lines: int | None = None) -> str:
        """What the process printed (its last ``lines`` lines when given)."""
        text = Path(self._log.name).read_text(errors="replace")
        return text if lines is None else "\n".join(text.splitlines()[-lines:])

    def close(self) -> None:
        """Stop if running, and drop the captured output."""
        try:
            self.stop()
        finally:
            self._log.close()

    def __enter__(self) -> TopologyProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
