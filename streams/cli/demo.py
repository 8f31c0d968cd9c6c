"""``streams demo``: the guided tour of what works (see ``streams.demo``)."""

from __future__ import annotations

import typer

from streams.cli._common import console

OnlyOpt = typer.Option(
    None,
    "--only",
    metavar="STEP[,STEP...]",
    help="Run these steps of the tour only (round-trip, topology, state, concurrency, ...; "
    "a wrong name lists them all).",
)


def demo(only: str | None = OnlyOpt) -> None:
    """Run the tour on the local broker (or KAFKA_BOOTSTRAP_SERVERS)."""
    # Imported here: the tour loads most of the package, which no other command needs to.
    from streams.demo.runner import run_demo

    run_demo(console, [name.strip() for name in only.split(",")] if only else None)
