"""``streams demo``: the guided tour of what works (see ``streams.demo``)."""

from __future__ import annotations

from streams.cli._common import console
from streams.demo.runner import run_demo


def demo() -> None:
    """Run the tour on the local broker (or KAFKA_BOOTSTRAP_SERVERS)."""
    run_demo(console)
