"""A Runtime on a background thread, for tests that run instances in this process."""

from __future__ import annotations

import threading

from streams.runtime import Runtime


class RuntimeThread:
    """Runs ``runtime.run()`` on a daemon thread; ``stop()`` joins it and returns the
    exception ``run`` raised, if any."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.runtime.run()
        except BaseException as exc:
            self.error = exc

    def stop(self, timeout: float) -> BaseException | None:
        self.runtime.stop()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the runtime did not stop"
        return self.error
