"""``streams query APP TABLE KEY``: the value of KEY in a table of a running topology.

Asks the instances of APP that serve a query port (``streams run --query-port``) for
``/stores/TABLE/KEY``, on the instance that owns the key's partition
(``streams.patterns.queries``), and prints the value as JSON. A windowed table: the key's
open windows, a line each (start, end, value), those starting between ``--from`` and
``--to``.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from streams.cli._common import (
    BootstrapOpt,
    ConfigFileOpt,
    JsonOpt,
    SettingOpt,
    TimeoutOpt,
    command_cluster,
    fail,
    http_token_option,
    parse_time_flag,
    print_json,
)

FromOpt = typer.Option(
    None,
    "--from",
    metavar="TIME",
    help="A windowed table: windows starting at or after, a time with a zone "
    "(2026-11-30T10:00:00Z, @EPOCH_MS) or a duration ago (30m, 2h, PT2H).",
)
ToOpt = typer.Option(
    None,
    "--to",
    metavar="TIME",
    help="A windowed table: windows starting at or before, a time or a duration ago.",
)

TokenFileOpt = http_token_option("The token the instances' query ports ask for")


def query_command(  # noqa: PLR0917 - a command's options
    app: str = typer.Argument(
        ..., metavar="APP", help="The app id (or a projection's name: its current app)."
    ),
    table: str = typer.Argument(..., metavar="TABLE", help="The table: its step's name."),
    key: str = typer.Argument(..., metavar="KEY", help="The record key to look up."),
    start_from: str | None = FromOpt,
    start_to: str | None = ToOpt,
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    timeout: float = TimeoutOpt,
    token_file: Path | None = TokenFileOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Print the value of KEY in TABLE of the running app APP, asked of the instance that
    owns the key (a windowed table: its windows, a line each); exit 1 when the key has
    none."""
    from streams.http_access import read_token
    from streams.patterns.projections import current_app
    from streams.patterns.queries import query

    token = read_token(token_file)
    bounds = {
        "start_from": parse_time_flag("--from", start_from),
        "start_to": parse_time_flag("--to", start_to),
    }
    cluster = command_cluster(bootstrap, timeout, config_file, client)
    app_id = current_app(cluster, app)
    value = query(cluster, app_id, table, key, timeout=timeout, token=token, **bounds)
    if isinstance(value, list):  # a windowed table's windows (values are never lists)
        if not value:
            fail(f"{table} of {app_id} has no window for {key!r}")
        if as_json:
            print_json({"app_id": app_id, "table": table, "key": key, "windows": value})
            return
        for window in value:
            shown = json.dumps(window["value"], ensure_ascii=False)
            typer.echo(f"{window['start']}  {window['end']}  {shown}")
        return
    if value is None:
        fail(f"{table} of {app_id} has no value for {key!r}")
    if as_json:
        print_json({"app_id": app_id, "table": table, "key": key, "value": value})
        return
    typer.echo(json.dumps(value, ensure_ascii=False))
