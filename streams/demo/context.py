"""What every demo step gets: the broker, the console, and topic names scoped to this run.

``DemoContext.topic`` names a topic ``demo-<run id>-<name>``; ``example`` loads an example
topology as an app ``demo-<run id>-<app>`` reading a new topic. Every topic of the run is
named so, the ones the apps make too (outputs, retry tiers, DLQs, changelogs): the runner
deletes them all after the last step, even when a step fails (``prefix``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from rich.console import Console
from rich.text import Text

from streams.cluster import Topics, admin_client, create_topic
from streams.examples import example_path
from streams.runtime.topics import prepare_topics
from streams.topology import Topology, load_topology


@dataclass
class DemoContext:
    bootstrap: str
    console: Console
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    _step: int = 1  # the broker is step 1

    def say(self, title: str, text: str) -> None:
        """Print one numbered step line: ``<n>. <title>: <text>``."""
        self._step += 1
        self.console.print(step_line(self._step, title, text))

    @property
    def prefix(self) -> str:
        """What every topic and app id of this run starts with (then ``-``)."""
        return f"demo-{self.run_id}"

    def topic(self, name: str) -> str:
        """A topic name unique to this run, deleted after the demo."""
        return f"{self.prefix}-{name}"

    def example(
        self, example: str, app: str, *, source: str, partitions: int, **params: str
    ) -> tuple[Topology, str]:
        """The example topology ``example`` as app ``demo-<run id>-<app>``, its ``input``
        a new topic ``source`` (named by ``topic``) of ``partitions``, ``params`` its other
        ``--set`` values; the topics it owns created. Returns it and its input topic."""
        name = self.topic(source)
        admin = admin_client(self.bootstrap)
        create_topic(admin, name, partitions=partitions)
        app_id = f"{self.prefix}-{app}"
        params = {"input": name, **params}
        topology = load_topology(example_path(example), app_id=app_id, params=params)
        prepare_topics(Topics(admin), topology)
        return topology, name


def step_line(step: int, title: str, text: str) -> Text:
    """``<n>. <title>: <text>``, the title in bold; nothing read as markup."""
    return Text.assemble((f"{step}. {title}", "bold"), f": {text}")
