"""docs/architecture.md shows the code's layers and chain of steps, not a copy that drifts.

Its "Layers" table is checked against ``streams._layers.LAYERS``; its chain line (head
first, ``[step]`` only when the topology needs it, ``a | b`` one or the other) against the
steps ``build_chain`` assembles for a topology that needs none of the optional steps and
for one that needs them all. The same line is in ``streams.pipeline.chain``'s docstring,
and the page's drawing of the record path names every step of it. ``streams.pipeline``'s
docstring gives each of its modules a line, and every file the page names exists.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import streams
import streams.pipeline.chain
from streams._layers import LAYERS
from streams.envelope import Envelope
from streams.failures import RetryPolicy
from streams.pipeline.step import Forward
from streams.runtime import Runtime, RuntimeConfig
from streams.runtime.state import IN_MEMORY
from streams.testing.driver import PassThrough
from streams.testing.memory import MemoryCluster
from streams.testing.memory.admin import MemoryClients
from streams.topology import ProcessorContext, Topology, TopologyBuilder, owned

ROOT = Path(streams.__file__).resolve().parents[1]
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()
INTAKE = "intake"  # the caller's own steps: the page names them by role, not by class
T, V = "order.placed", 2


def _section(title: str) -> str:
    start = ARCHITECTURE.index(f"\n## {title}\n")
    end = ARCHITECTURE.find("\n## ", start + 1)
    return ARCHITECTURE[start : end if end >= 0 else None]


def page_layers() -> list[set[str]]:
    rows = re.findall(r"^\| (\d+) \| [^|]* \| (.*) \|$", _section("Layers"), re.MULTILINE)
    assert [int(level) for level, _ in rows] == list(range(len(rows))), "rows lowest first"
    return [set(re.findall(r"`([\w.]+)`", parts)) for _, parts in rows]


def test_the_pages_layers_are_the_layer_table() -> None:
    shown = page_layers()
    differences = [
        f"layer {level}: only in LAYERS {sorted(code - page)}, "
        f"only on the page {sorted(page - code)}"
        for level, (code, page) in enumerate(zip(LAYERS, shown, strict=False))
        if code != page
    ]
    assert (differences, len(shown)) == ([], len(LAYERS))


def chain_line(text: str) -> list[list[str]]:
    """The chain line in ``text``: each position's alternatives, brackets kept."""
    line = re.search(r"\[intake\] →.*?→ Commit", text, re.DOTALL)
    assert line is not None, "no chain line"
    return [
        [name.strip() for name in position.split("|")]
        for position in " ".join(line.group().split()).split(" → ")
    ]


def expected(line: list[list[str]], *, every_step: bool, intake: str) -> list[str]:
    """The classes a chain holds: every optional step and the last alternative, or none
    and the first."""
    out = []
    for alternatives in line:
        name = alternatives[-1] if every_step else alternatives[0]
        if name.startswith("["):
            if not every_step:
                continue
            name = name.strip("[]")
        out.append(intake if name == INTAKE else name)
    return out


class Intake(Forward):
    """A caller's step put first (as ``streams replay --through`` puts its own)."""


async def enrich(env: Envelope) -> Envelope:
    return env


class Ticker:
    def init(self, ctx: ProcessorContext) -> None:
        ctx.schedule(60, self.tick)

    def process(self, env: Envelope, ctx: ProcessorContext) -> Envelope:
        return env

    def tick(self, now_ms: int, ctx: ProcessorContext) -> None:
        return None


def plain() -> Topology:
    b = TopologyBuilder("app")
    b.source("orders", type=T, version=V).to(owned("out"), type=T, version=V)
    return b.build()


def needing_every_step() -> Topology:
    """A stream joining a table topic (event-time order), failures routed, an async step
    with a concurrency above 1, a timer."""
    b = TopologyBuilder("app", concurrency=4, retry=RetryPolicy())
    profiles = b.table("customers", type="customer.profile", version=1, name="profiles")
    orders = b.source("orders", type=T, version=V).map(enrich)
    orders.left_join(profiles, lambda env, value: env).process(Ticker()).to(
        owned("out"), type=T, version=V
    )
    return b.build()


def built_steps(topology: Topology, intake: list[Any]) -> list[str]:
    cluster = MemoryCluster(partitions=lambda topic: 1)
    for topic in topology.topics_read:
        cluster.create_topic(topic, 1)
    # no stall watch: its step, an intake of the runtime's own, would come first
    config = RuntimeConfig(
        bootstrap="memory", state_dir=IN_MEMORY, shutdown_timeout_s=0, stall_after_s=0
    )
    runtime = Runtime(
        topology, config, codec=PassThrough(), clients=MemoryClients(cluster), intake=intake
    )
    try:
        chain: streams.pipeline.chain.Chain = runtime._chain  # what it runs: no public view
        return [type(step).__name__ for step in chain.steps()]
    finally:
        runtime.close()


@pytest.mark.parametrize("every_step", [False, True])
def test_the_pages_chain_is_what_build_chain_assembles(every_step: bool) -> None:
    topology = needing_every_step() if every_step else plain()
    intake: list[Any] = [Intake] if every_step else []
    line = chain_line(_section("The record path"))
    assert built_steps(topology, intake) == expected(line, every_step=every_step, intake="Intake")


def test_the_chain_modules_docstring_has_the_pages_line() -> None:
    assert chain_line(streams.pipeline.chain.__doc__ or "") == chain_line(ARCHITECTURE)


def test_the_drawing_of_the_record_path_names_every_step() -> None:
    drawing = _section("The record path").split("```mermaid")[1].split("```")[0]
    steps = {name.strip("[]") for position in chain_line(ARCHITECTURE) for name in position}
    assert sorted(name for name in steps - {INTAKE} if name not in drawing) == []


def test_the_record_paths_docstring_names_each_of_its_modules() -> None:
    package = Path(streams.pipeline.chain.__file__).parent
    modules = {path.stem for path in package.glob("*.py")} - {"__init__"}
    named = set(re.findall(r"^- ``(\w+)``:", streams.pipeline.__doc__ or "", re.MULTILINE))
    assert (sorted(modules - named), sorted(named - modules)) == ([], [])


def test_every_file_the_page_names_exists() -> None:
    """``pipeline/step.py``-style paths under ``streams/`` (or the repository); a bare
    ``offsets.py`` is in a folder its line names (``cluster/``)."""
    missing = []
    for line in ARCHITECTURE.splitlines():
        paths = re.findall(r"`([\w./-]+(?:\.py|/))`", line)
        folders = [ROOT / "streams" / p for p in paths if p.endswith("/")]
        for path in paths:
            places = [ROOT / "streams" / path, ROOT / path]
            if "/" not in path:
                places += [folder / path for folder in folders]
            if not any(place.exists() for place in places):
                missing.append(path)
    assert missing == []
