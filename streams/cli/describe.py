"""``streams describe FILE``: what a topology reads, does and writes, as text or Mermaid."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer

from streams.config import parse_key_values
from streams.topology import load_topology

# Shared with ``streams run``: how a topology file is selected and parametrised.
AppIdOpt = typer.Option(
    None,
    "--app-id",
    "-a",
    envvar="STREAMS_APP_ID",
    help="App id: consumer group and prefix of owned topics (default: the topology's).",
)
SetOpt = typer.Option(
    [], "--set", "-s", help="KEY=VALUE passed to the file's build() (repeatable)."
)


def parse_params(items: list[str]) -> dict[str, str]:
    """``--set KEY=VALUE`` items as a dict; raises StreamsError on an item without ``=``."""
    return parse_key_values(items, "--set")


class Format(StrEnum):
    text = "text"
    mermaid = "mermaid"


FileArg = typer.Argument(..., help="A topology file, e.g. topology/orders.py.")
FormatOpt = typer.Option(Format.text, "--format", "-f", help="text or mermaid.")


def describe(
    file: Path = FileArg,
    format: Format = FormatOpt,
    app_id: str | None = AppIdOpt,
    params: list[str] = SetOpt,
) -> None:
    """Print a topology: its nodes and links, and the topics it reads, writes and owns."""
    topology = load_topology(file, app_id=app_id, params=parse_params(params))
    typer.echo(topology.describe(format.value), nl=False)
