"""``streams demo``: the guided tour of what works (see ``streams.demo``)."""

from __future__ import annotations

from streams.cli._common import console


def demo() -> None:
    """Run the tour on the local broker (or KAFKA_BOOTSTRAP_SERVERS)."""
    # Imported here: the tour loads most of the package, which no other command needs to.
    from streams.demo.runner import run_demo  # noqa: PLC0415

    run_demo(console)
