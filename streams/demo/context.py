"""What every demo step gets: the broker, the console, and topic names scoped to this run.

``DemoContext.topic`` names a topic ``demo-<run id>-<name>`` and records it; every topic a
step creates or makes the runtime create goes into ``topics``, which the runner deletes
after the last step (even when a step fails).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from rich.console import Console
from rich.text import Text


@dataclass
class DemoContext:
    bootstrap: str
    console: Console
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    topics: list[str] = field(default_factory=list)
    _step: int = 1  # the broker is step 1

    def say(self, title: str, text: str) -> None:
        """Print one numbered step line: ``<n>. <title>: <text>``."""
        self._step += 1
        self.console.print(step_line(self._step, title, text))

    def topic(self, name: str) -> str:
        """A topic name unique to this run, deleted after the demo."""
        full = f"demo-{self.run_id}-{name}"
        self.topics.append(full)
        return full


def step_line(step: int, title: str, text: str) -> Text:
    """``<n>. <title>: <text>``, the title in bold; nothing read as markup."""
    return Text.assemble((f"{step}. {title}", "bold"), f": {text}")
