"""``streams describe FILE``: what a topology reads, does and writes, as text, Mermaid or
JSON (``--json``: nodes, links, topics, stores and failure topics)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer

from streams.cli._common import (
    JsonOpt,
    SchemasOpt,
    fail,
    option,
    print_json,
    use_schemas,
)
from streams.config import parse_key_values

# Shared with ``streams run``: how a topology file is selected and parametrised.
AppIdOpt = option(
    None,
    "--app-id",
    envvar="STREAMS_APP_ID",
    help="App id: consumer group and prefix of owned topics (default: the topology's).",
)
SetOpt = option(
    [],
    "--set",
    metavar="KEY=VALUE",
    help="A parameter of the file's build() (repeatable).",
)


def parse_params(items: list[str]) -> dict[str, str]:
    """``--set KEY=VALUE`` items as a dict; raises StreamsError on an item without ``=``."""
    return parse_key_values(items, "--set")


class Format(StrEnum):
    text = "text"
    mermaid = "mermaid"


FileArg = typer.Argument(..., help="A topology file, e.g. topology/orders.py.")
FormatOpt = option(None, "--format", help="Text (the default), or a Mermaid flowchart.")


def describe(  # noqa: PLR0917 - a command's options
    file: Path = FileArg,
    format: Format | None = FormatOpt,
    app_id: str | None = AppIdOpt,
    params: list[str] = SetOpt,
    schemas: Path | None = SchemasOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Print a topology: its nodes and links, and the topics it reads, writes and owns."""
    from streams.topology import load_topology
    from streams.topology.describe import describe_data

    if as_json and format is not None:
        fail(f"--json and --format {format} are two outputs; give one")
    use_schemas(schemas)
    topology = load_topology(file, app_id=app_id, params=parse_params(params))
    if as_json:
        print_json(describe_data(topology))
        return
    typer.echo(topology.describe((format or Format.text).value), nl=False)
