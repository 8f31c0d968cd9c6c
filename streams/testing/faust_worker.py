"""Run a Faust app file as a worker in a child process (the interop tests, the demo).

``FaustWorkerProcess(path, env=...)`` runs ``python <path> worker -l info`` (the app file
calls ``app.main()``, Faust's command line): a child process, because a Faust worker owns
its event loop and signal handlers, and SIGTERM exercises its clean shutdown (commit,
leave the group). ``wait_started`` blocks until Faust logs "Worker ready" (raising with
the output when the worker exits first); ``stop`` sends SIGTERM and waits. Part of the
test kit, not of ``streams.faust``: it drives a worker as ``TopologyProcess`` drives
``streams run``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path

from streams.testing.topology_process import TopologyProcess
from streams.testing.wait import wait_until

_READY = re.compile(r"\[\^Worker\]: Ready")


class FaustWorkerProcess(TopologyProcess):
    """A Faust worker for the app in ``path``; see the module docstring."""

    def __init__(
        self,
        path: str | Path,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
    ) -> None:
        super().__init__(path, "", env=env, cwd=cwd)

    @property
    def command(self) -> list[str]:
        return [sys.executable, str(self.path), "worker", "-l", "info"]

    def wait_started(self, timeout: float = 60.0, *, assigned: bool = True) -> None:
        """Block until the worker is ready (it owns its partitions by then)."""

        def seen() -> bool:
            if _READY.search(self.output()):
                return True
            self.check()
            return False

        wait_until(seen, timeout, interval=0.05, what=f"Faust worker {self.path}", seen=self.output)
