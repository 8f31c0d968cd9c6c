"""``streams consume TOPIC``: print a topic's envelopes, decoded, as JSON lines or a table.

A thin layer over ``streams.tools.consume``. Reads without a consumer group and commits
nothing. Ctrl-C stops it quietly with exit status 130.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from streams.cli._common import (
    BootstrapOpt,
    ConfigFileOpt,
    SchemasOpt,
    SettingOpt,
    TimeoutOpt,
    command_cluster,
    console,
    err_console,
    fail,
    option,
    parse_flag,
    use_schemas,
)
from streams.cli.replay import ABSOLUTE_POSITIONS_HELP

if TYPE_CHECKING:
    from confluent_kafka import Message
    from rich.table import Table

    View = Callable[[Message], dict[str, Any]]


DATA_WIDTH = 240  # characters of a payload a table row shows (it wraps)


class Format(StrEnum):
    json = "json"
    table = "table"
    raw = "raw"


class Isolation(StrEnum):
    read_committed = "read_committed"
    read_uncommitted = "read_uncommitted"


TypesOpt = typer.Option(
    [], "--type", help="Only records of this envelope type, ce_type (repeatable)."
)
KeysOpt = option([], "--key", help="Only records with this key (repeatable).")
FormatOpt = option(
    None,
    "--format",
    help="json (the default): one JSON object per line, decoded; table: one row per record; "
    "raw: JSON lines of key and value as they are, not decoded.",
)
IsolationOpt = typer.Option(
    Isolation.read_committed,
    "--isolation",
    help="read_committed skips records of open and aborted transactions.",
)


def consume_command(  # noqa: PLR0917 - a command's options
    source: str = typer.Argument(
        ..., metavar="TOPIC", help="Topic to read, or TOPIC:0,2 for some partitions."
    ),
    start: str | None = typer.Option(
        None,
        "--from",
        metavar="POSITION",
        help=f"Where to start (default earliest): {ABSOLUTE_POSITIONS_HELP}.",
    ),
    tail: int | None = typer.Option(
        None,
        "--tail",
        min=1,
        metavar="N",
        help="Only the last N records of each partition (offsets before the end, or --to; "
        "kcat -o -N); with --follow, then the new ones.",
    ),
    end: str | None = typer.Option(
        None,
        "--to",
        metavar="POSITION",
        help="Where to stop (exclusive; default: the end offsets when the command starts). "
        "Same forms as --from.",
    ),
    follow: bool = option(
        False,
        "--follow",
        help="Keep waiting for new records (until --max, --to or Ctrl-C) instead of stopping "
        "at the end offsets as of the start.",
    ),
    types: list[str] = TypesOpt,
    keys: list[str] = KeysOpt,
    max_records: int | None = option(
        None, "--count", "--max", min=0, help="Stop after N records (after the filters)."
    ),
    output: Format | None = FormatOpt,
    headers: bool = typer.Option(False, "--headers", help="Show each record's headers too."),
    isolation: Isolation = IsolationOpt,
    schemas: Path | None = SchemasOpt,
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    timeout: float = TimeoutOpt,
    as_json: bool = typer.Option(False, "--json", help="The same as --format json."),
) -> None:
    """Print the records of TOPIC, decoded from their envelopes.

    Each JSON line has topic, partition, offset, timestamp, key, and the envelope's id,
    type, version, time, source, correlation_id, causation_id and data. A record that is
    not an envelope (or whose type or version has no schema) is shown raw, key and value
    as text when UTF-8, else base64 (key_base64, value_base64), with the reason under
    "error"; reading goes on. No consumer group is joined and nothing is committed.
    """
    from streams.replay import (
        PositionError,
        RecordFilter,
        parse_position_spec,
        parse_topic_selection,
    )
    from streams.tools.consume import ConsumeRequest, read_batches

    if tail is not None and start is not None:
        raise PositionError("--tail N starts N records before the end: drop --from")
    if as_json and output not in {None, Format.json}:
        fail(f"--json and --format {output} are two outputs; give one")
    fmt = Format.json if as_json or output is None else output
    request = ConsumeRequest(
        parse_flag("TOPIC", parse_topic_selection, source),
        parse_flag("--from", parse_position_spec, start or "earliest"),
        parse_flag("--to", parse_position_spec, end) if end is not None else None,
        follow=follow,
        record_filter=RecordFilter.of(types, keys),
        max_records=max_records,
        read_committed=isolation is Isolation.read_committed,
        tail=tail,
    )
    show = _viewer(fmt, schemas, headers, types)
    cluster = command_cluster(bootstrap, timeout, config_file, client)
    try:
        batches = read_batches(cluster, request, on_wait=_note)
        if fmt is Format.table:
            _print_tables(batches, show, streaming=follow)
        else:
            for batch in batches:
                sys.stdout.write(
                    "".join(json.dumps(show(m), ensure_ascii=False) + "\n" for m in batch)
                )
                sys.stdout.flush()
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except BrokenPipeError:  # `streams consume t | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(0) from None


def _note(message: str) -> None:
    err_console.print(message, highlight=False, soft_wrap=True)


def _viewer(fmt: Format, schemas: Path | None, with_headers: bool, types: list[str]) -> View:
    from streams.codec.avro import AvroCodec
    from streams.schemas.catalog import default_catalog
    from streams.tools.consume import raw_view, view

    if fmt is Format.raw:
        return lambda msg: raw_view(msg, with_headers=with_headers)
    examples = _schemas_outside_a_project() if schemas is None else None
    use_schemas(schemas if schemas is not None else examples)
    codec = AvroCodec(default_catalog(), require_headers=False)
    # A --type the project's schemas do not know would match nothing: a typo, said before
    # reading. Outside a project the types are anyone's: nothing is refused.
    for name in types if examples is None else ():
        if not codec.catalog.has_type(name):
            known = ", ".join(codec.catalog.types()) or "none"
            fail(f"--type {name}: no schemas for type {name!r} (known: {known})")
    return lambda msg: view(msg, codec, with_headers=with_headers)


def _schemas_outside_a_project() -> Path | None:
    """Outside a project (no schemas folder found, none named), the example schemas: a
    record of their types decodes, any other envelope shows its metadata and raw
    payload. Said once on stderr, so JSON lines on stdout stay clean."""
    from streams.examples import example_schemas
    from streams.schemas.catalog import schemas_dir

    if schemas_dir().is_dir():
        return None
    _note(
        f"no schemas folder here ({schemas_dir()}): decoding with Streams' example schemas; "
        "envelopes of other types show their metadata and raw payload (--schemas DIR)"
    )
    return example_schemas()


def _print_tables(batches: Iterable[list[Message]], show: View, *, streaming: bool) -> None:
    """One table at the end; with ``streaming`` (--follow), one per batch as it comes
    (the header only on the first)."""
    rows: list[dict[str, Any]] = []
    first = True
    for batch in batches:
        rows.extend(show(m) for m in batch)
        if streaming:
            console.print(_table(rows, header=first))
            rows, first = [], False
    if not streaming or first:
        console.print(_table(rows, header=True))


def _table(rows: list[dict[str, Any]], *, header: bool) -> Table:
    from rich.table import Table

    table = Table(show_header=header, caption=None if rows or not header else "no records")
    table.add_column("p", justify="right", no_wrap=True)
    table.add_column("offset", justify="right", no_wrap=True)
    table.add_column("timestamp", overflow="fold", max_width=24)
    for col in ("key", "type"):
        table.add_column(col, overflow="fold", max_width=20)
    table.add_column("data", overflow="fold", ratio=1)
    for r in rows:
        key = r["key"] if "key" in r else f"base64:{r['key_base64']}"
        if "error" in r:  # an envelope without a schema here still has a type
            kind = f"{r['type']}@{r['version']}" if "type" in r else "(not an envelope)"
            shown = f"error: {r['error']}"
        else:
            kind = f"{r['type']}@{r['version']}"
            shown = json.dumps(r["data"], ensure_ascii=False)
        if len(shown) > DATA_WIDTH:
            shown = shown[: DATA_WIDTH - 1] + "…"
        table.add_row(str(r["partition"]), str(r["offset"]), r["timestamp"] or "",
                      "" if key is None else str(key), kind, shown)  # fmt: skip
    return table
